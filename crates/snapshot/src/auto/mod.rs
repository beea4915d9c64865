//! `--codec auto` (issue 17): for each tensor, the smallest lossless encoding among the candidates
//! that apply, chosen from statistics of a sample of the tensor and, where the predictions are
//! close, a trial encode of that sample — a few percent of the compression time, not a second
//! pass.
//!
//! Candidates ([`Candidate`]):
//! - **LMC** on the tensor's bytes (LMC paper §4: byte grouping + block-adaptive Huffman + runs);
//! - **NeuZip** lossless, for bf16 / f16 / f32 (NeuZip paper §2.2: rANS-coded exponents, sign
//!   and mantissa stored as they are);
//! - with a base tensor of the same name, dtype and shape: **LMC on the XOR** with the base (the
//!   container's delta path, LMC paper §3 bit flips), **BitSnap**'s bitmask delta (BitSnap paper
//!   §3.3), and **unchanged** when the sampled XOR is all zero. An unchanged tensor needs no
//!   marker of its own: its XOR is zero, which LMC stores as one run block per 64 / 128 KiB of
//!   every byte group (2 bytes each) plus a 33-byte stream header per 1 MiB frame — 0.005 % of the
//!   tensor — so the format is unchanged and the tensor is simply an LMC delta;
//! - **stored** as it is: its size is its length, and it wins on small incompressible pieces
//!   (the gaps of a GGUF or PyTorch file), where LMC pays a 33-byte stream header.
//!
//! The sample ([`sample_ranges`]): the whole tensor up to [`WHOLE_SAMPLE`] bytes, else
//! 1..=[`MAX_CHUNKS`] chunks of [`SAMPLE_CHUNK`] bytes spread evenly over it (one per
//! [`SAMPLE_SHARE`] chunks of the tensor): 1/64 of the tensor, at most 256 KiB (1 % of a 23 MB
//! embedding), at least one chunk (5.5 % of a 295 KB one).
//!
//! Predictions from statistics, scaled from the sample to the tensor:
//! - LMC (the §4.1 estimate, made exact for the code LMC builds): per byte group (after the
//!   sign rotation the codec applies), the cost of the group's length-limited Huffman code
//!   (`huffman::build_lengths`) — or 8 bits per byte when the group's order-0 entropy is within
//!   1/64 of 8 bits (the encoder stores such blocks raw), or a run block when it is one value, or,
//!   when one byte value covers half the group (sparse deltas), the code over bytes and run
//!   symbols with their extra bits (`rle::run_histogram`) if cheaper — plus, per block of the
//!   tensor, the table LMC's own estimate charges (`17 + used / 3` bytes), and per 1 MiB frame
//!   the stream header. For the XOR the cheaper of the grouped and the plain byte layout (the
//!   encoder tries both on sparse input).
//! - NeuZip: the exponents' cost under the rANS table the encoder builds from their histogram
//!   (`rans::FreqTable::cost_bits`; the histogram is read off LMC's top byte group, which after
//!   the sign rotation holds the exponent), plus `1 + mantissa` raw bits per value and the
//!   per-65 536-value table and lane states: exact but for sampling and for the encoder's
//!   per-block tables, which adapt better than one (1.8 % on 45 MB bf16 tensors).
//! - BitSnap: the changed fraction of the sample gives the bitmask (or the dense mode, past
//!   BitSnap's 93.75 % break-even) and the changed values, costed as LMC (above) on the sampled
//!   changed values.
//!
//! A tensor sampled whole is simply encoded with every candidate: its predictions are exact, and
//! encoding a few KiB costs less than computing their statistics.
//!
//! Trial encode: when two or more candidates are predicted within [`TRIAL_MARGIN`] of the
//! smallest, each of them but NeuZip and stored is encoded on the sample, and its prediction becomes the
//! statistics prediction of the tensor times (trial size / statistics prediction of the sample):
//! the trial measures what the model misses (Huffman runs, block splits, the sparse layout),
//! the model keeps the tensor's true block and frame counts. NeuZip is not trial-encoded: its
//! size is a closed form of the exponent histogram (the rest is raw), and its encoder is 3–5×
//! slower than LMC's, so a trial would cost more than it could correct.
//!
//! Speed counts too: NeuZip's encoder is several times slower than LMC's, and where it wins it
//! wins by ~1 % (MiniLM's matrices), so it is chosen only where it is predicted at least
//! [`SLOW_MIN_SAVING`] smaller than the best of the other candidates ([`Candidate::is_slow`]);
//! that keeps auto near LMC's compression speed (0.86–0.97× of it, BENCHMARKS.md) and within
//! 0.5 % of the exhaustive best. It is not the default codec of `bitlens compress` (`lmc` is): it
//! falls short of 0.9× LMC's speed on every file.
//!
//! Ties go to the earlier candidate in [`Candidate::ALL`] order (LMC first: the fastest to
//! decode). Each tensor's record ([`AutoChoice`]) keeps the predictions and the winner; the
//! achieved size is the tensor's stored length in the snapshot's index.

use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::reader::{BaseSource, Source};
use bitlens_codecs::byte_group::Transform;
use bitlens_codecs::{neuzip, Width};
use bitlens_tensors::{Dtype, Header, TensorInfo};
use serde::{Deserialize, Serialize};

/// Tensors up to this many bytes are sampled whole.
pub const WHOLE_SAMPLE: u64 = 64 << 10;
/// Bytes per sample chunk of a larger tensor (a multiple of every element width).
pub const SAMPLE_CHUNK: u64 = 16 << 10;
/// Most sample chunks per tensor (256 KiB).
pub const MAX_CHUNKS: u64 = 16;
/// A larger tensor gets one chunk per this many chunks of it (a 1/64 sample), at least one.
pub const SAMPLE_SHARE: u64 = 64;
/// A slow candidate ([`Candidate::is_slow`]) is chosen only where it is predicted at least this
/// fraction smaller than the best fast one: on MiniLM bf16 NeuZip wins 44 of 104 tensors by ~1 %
/// each (0.27 % of the file) at 4.3× LMC's compression time; with this rule auto stays within
/// 0.5 % of the exhaustive best and at LMC's speed (BENCHMARKS.md, "Automatic codec choice").
pub const SLOW_MIN_SAVING: f64 = 0.02;
/// Candidates predicted within this fraction of the smallest are trial-encoded on the sample.
pub const TRIAL_MARGIN: f64 = 0.005;

/// Bytes of a PLMC stream that are not blocks, per segment: header, one segment entry and the
/// LMC layout byte.
const LMC_STREAM_BYTES: f64 =
    (bitlens_codecs::plmc::HEADER_LEN + bitlens_codecs::plmc::SEGMENT_ENTRY_LEN + 1) as f64;
/// Fixed bytes of a NeuZip stream: magic, version, format, k, norm, count, tail length.
const NEUZIP_HEADER_BYTES: f64 = 17.0;
/// Fixed bytes of a BitSnap delta stream: magic, version, width, mode, values, count, tail
/// length, and the length of the values' PLMC stream.
const BITSNAP_HEADER_BYTES: f64 = 25.0;

thread_local! {
    /// The buffers of a choice, reused from tensor to tensor: a 256 KiB sample is past
    /// the allocator's map threshold, so a fresh one would be fresh pages for every tensor.
    static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::default());
}

/// The buffers [`choose`] works in ([`BUFFERS`]).
#[derive(Default)]
struct Buffers {
    /// The tensor's sampled bytes.
    sample: Vec<u8>,
    /// The base tensor's bytes at the same places.
    base: Vec<u8>,
    /// Their XOR.
    xor: Vec<u8>,
    /// The sampled elements that changed (BitSnap's values).
    changed: Vec<u8>,
    /// A trial or exact encode's payload.
    payload: Vec<u8>,
    /// The encoder's scratch.
    scratch: Vec<u8>,
}

/// One lossless way to store a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Candidate {
    /// LMC on the tensor's bytes.
    Lmc,
    /// LMC on the XOR with the base tensor.
    LmcDelta,
    /// The base tensor unchanged (the sampled XOR is zero): stored as an LMC delta.
    Unchanged,
    /// BitSnap's bitmask delta against the base tensor.
    Bitsnap,
    /// NeuZip lossless (float dtypes).
    Neuzip,
    /// The bytes as they are (incompressible pieces: no stream header to pay).
    Stored,
}

impl Candidate {
    /// Every candidate, in order of preference on a tie.
    pub const ALL: [Candidate; 6] = [
        Candidate::Lmc,
        Candidate::LmcDelta,
        Candidate::Unchanged,
        Candidate::Bitsnap,
        Candidate::Neuzip,
        Candidate::Stored,
    ];

    /// Its name in the CLI's JSON and on the page.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::Lmc => "lmc",
            Candidate::LmcDelta => "lmc-delta",
            Candidate::Unchanged => "unchanged",
            Candidate::Bitsnap => "bitsnap",
            Candidate::Neuzip => "neuzip",
            Candidate::Stored => "stored",
        }
    }

    /// The container codec that stores a tensor of `dtype` this way.
    pub fn codec(self, dtype: Dtype) -> Codec {
        let lmc = Codec::lmc_for_width(dtype.lane_bytes());
        match self {
            Candidate::Lmc | Candidate::LmcDelta | Candidate::Unchanged => lmc,
            Candidate::Neuzip => crate::choice::float_format(dtype)
                .map_or(lmc, |f| Codec::NeuZip(neuzip::Settings::lossless(f))),
            Candidate::Bitsnap => Codec::BitSnapDelta {
                width: Width::from_bytes(dtype.lane_bytes()).unwrap_or(Width::W1),
                entropy_coded: true,
            },
            Candidate::Stored => Codec::Stored,
        }
    }

    /// True for a candidate whose encoder is several times slower than LMC's (NeuZip: its rANS
    /// encoder runs at ~150–220 MB/s against LMC's 700–1100 MB/s on one core here), which auto
    /// takes only where it saves at least [`SLOW_MIN_SAVING`].
    pub fn is_slow(self) -> bool {
        self == Candidate::Neuzip
    }

    /// True when the tensor is stored against its base.
    pub fn is_delta(self) -> bool {
        !matches!(self, Candidate::Lmc | Candidate::Neuzip | Candidate::Stored)
    }
}

/// One candidate's predicted size for a whole tensor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The candidate.
    pub candidate: Candidate,
    /// Predicted stored bytes of the tensor (its frames' payloads, as the index counts them).
    pub bytes: u64,
    /// True when a trial encode of the sample corrected the statistics prediction.
    pub trial: bool,
}

/// What `auto` decided for one tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoChoice {
    /// Tensor name.
    pub name: String,
    /// Its dtype.
    pub dtype: Dtype,
    /// Its byte length.
    pub bytes: u64,
    /// Bytes of it that were sampled.
    pub sample_bytes: u64,
    /// Every candidate that applies, with its prediction, in [`Candidate::ALL`] order.
    pub predictions: Vec<Prediction>,
    /// The candidate chosen: the smallest prediction, NeuZip only where it saves at least
    /// [`SLOW_MIN_SAVING`].
    pub chosen: Candidate,
}

impl AutoChoice {
    /// The container codec of the chosen candidate.
    pub fn codec(&self) -> Codec {
        self.chosen.codec(self.dtype)
    }

    /// The chosen candidate's predicted bytes.
    pub fn predicted_bytes(&self) -> u64 {
        self.predictions
            .iter()
            .find(|p| p.candidate == self.chosen)
            .map_or(0, |p| p.bytes)
    }
}

/// The byte ranges `(offset, len)` of a tensor of `len` bytes that are sampled, for elements of
/// `lane` bytes (see the module doc). Empty for an empty tensor.
pub fn sample_ranges(len: u64, lane: u64) -> Vec<(u64, u64)> {
    if len <= WHOLE_SAMPLE {
        return if len == 0 { vec![] } else { vec![(0, len)] };
    }
    let count = len
        .div_ceil(SAMPLE_CHUNK * SAMPLE_SHARE)
        .clamp(1, MAX_CHUNKS);
    let span = len - SAMPLE_CHUNK;
    let lane = lane.max(1);
    (0..count)
        .map(|i| {
            // Evenly spread: the first chunk at the start, the last at the end.
            let at = span * i / (count - 1).max(1) + if count == 1 { span / 2 } else { 0 };
            (at - at % lane, SAMPLE_CHUNK)
        })
        .collect()
}

/// Chooses the encoding of every tensor of `header` (read from `src`; with a `base`, tensors the
/// base has with the same name, dtype and shape also get the delta candidates). Tensors are
/// sampled in parallel with feature `parallel`.
pub fn choose_all(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
) -> Result<Vec<AutoChoice>, SnapshotError> {
    let one = |t: &TensorInfo| {
        let start = header.file_range(t).0;
        let base_at = crate::compress::base_start(t, base).and_then(|at| base.map(|b| (b.src, at)));
        choose(t, src, start, base_at)
    };
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        header.tensors.par_iter().map(one).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        header.tensors.iter().map(one).collect()
    }
}

/// Chooses the encoding of tensor `t`, whose bytes start at `start` in `src`; `base` is where
/// the base tensor's bytes start, for the delta candidates.
pub fn choose(
    t: &TensorInfo,
    src: &dyn Source,
    start: u64,
    base: Option<(&dyn Source, u64)>,
) -> Result<AutoChoice, SnapshotError> {
    let len = t.byte_len();
    let lane = t.dtype.lane_bytes();
    let ranges = sample_ranges(len, lane as u64);
    let sample_len: u64 = ranges.iter().map(|r| r.1).sum();
    let read = |src: &dyn Source, at: u64, buf: &mut Vec<u8>| -> Result<(), SnapshotError> {
        buf.resize(sample_len as usize, 0);
        let mut pos = 0usize;
        for &(off, n) in &ranges {
            src.read_exact_at(at + off, &mut buf[pos..pos + n as usize])?;
            pos += n as usize;
        }
        Ok(())
    };
    let mut bufs = BUFFERS.with_borrow_mut(std::mem::take);
    let estimates = (|| {
        let b = &mut bufs;
        read(src, start, &mut b.sample)?;
        let base_sample = match base {
            Some((src, at)) => {
                read(src, at, &mut b.base)?;
                Some(&b.base[..])
            }
            None => None,
        };
        let mut work = Work {
            xor: &mut b.xor,
            changed: &mut b.changed,
            payload: &mut b.payload,
            scratch: &mut b.scratch,
        };
        Ok::<_, SnapshotError>(if sample_len == len {
            exact(t.dtype, &b.sample, base_sample, &mut work)
        } else {
            let mut e = estimates(t.dtype, len, &b.sample, base_sample, &mut work);
            trial(t.dtype, &mut e, &b.sample, base_sample, &mut work);
            e
        })
    })();
    BUFFERS.with_borrow_mut(|b| *b = bufs);
    let estimates = estimates?;
    let chosen = pick(&estimates);
    Ok(AutoChoice {
        name: t.name.clone(),
        dtype: t.dtype,
        bytes: len,
        sample_bytes: sample_len,
        predictions: estimates
            .iter()
            .map(|e| Prediction {
                candidate: e.candidate,
                bytes: e.full.round().max(0.0) as u64,
                trial: e.trial,
            })
            .collect(),
        chosen,
    })
}

/// The candidate to store a tensor with: the smallest prediction among the fast candidates, or
/// NeuZip where it is predicted at least [`SLOW_MIN_SAVING`] smaller than that (ties go to the
/// earlier candidate in [`Candidate::ALL`] order).
fn pick(estimates: &[Estimate]) -> Candidate {
    estimates
        .iter()
        .min_by(|a, b| a.weighed().total_cmp(&b.weighed()))
        .map_or(Candidate::Lmc, |e| e.candidate)
}

/// One candidate's statistics prediction for the sample and for the whole tensor.
struct Estimate {
    candidate: Candidate,
    /// Predicted bytes of the sample encoded as one frame.
    sample: f64,
    /// Predicted bytes of the whole tensor.
    full: f64,
    /// Corrected by a trial encode.
    trial: bool,
}

impl Estimate {
    /// The predicted bytes auto compares: a slow candidate's divided by
    /// `1 − SLOW_MIN_SAVING`, so it wins only where it saves at least that much.
    fn weighed(&self) -> f64 {
        if self.candidate.is_slow() {
            self.full / (1.0 - SLOW_MIN_SAVING)
        } else {
            self.full
        }
    }
}

/// The buffers the candidates are predicted and encoded in (borrowed from [`Buffers`]).
struct Work<'a> {
    xor: &'a mut Vec<u8>,
    changed: &'a mut Vec<u8>,
    payload: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
}

/// The statistics predictions of every candidate that applies, in [`Candidate::ALL`] order.
fn estimates(
    dtype: Dtype,
    len: u64,
    sample: &[u8],
    base: Option<&[u8]>,
    work: &mut Work,
) -> Vec<Estimate> {
    let w = Width::from_bytes(dtype.lane_bytes()).unwrap_or(Width::W1);
    let est = |candidate, model: &dyn Fn(u64) -> f64, sample_len: u64| Estimate {
        candidate,
        sample: model(sample_len),
        full: model(len),
        trial: false,
    };
    let n = sample.len() as u64;
    let mut out = Vec::with_capacity(5);
    let raw = GroupCosts::of(sample, w, Transform::SignRotate);
    out.push(est(Candidate::Lmc, &|l| raw.lmc_bytes(l), n));
    if let Some(base) = base {
        let xor = &mut *work.xor;
        xor.clear();
        xor.extend(sample.iter().zip(base).map(|(a, b)| a ^ b));
        let grouped = GroupCosts::of(xor, w, Transform::SignRotate);
        // The encoder tries the plain byte layout on sparse input only (half the bytes zero).
        let zeros = xor.iter().filter(|&&b| b == 0).count();
        let plain =
            (2 * zeros >= xor.len()).then(|| GroupCosts::of(xor, Width::W1, Transform::None));
        let model = |l| {
            let g = grouped.lmc_bytes(l);
            plain.as_ref().map_or(g, |p| g.min(p.lmc_bytes(l)))
        };
        let unchanged = xor.iter().all(|&b| b == 0);
        let kind = if unchanged {
            Candidate::Unchanged
        } else {
            Candidate::LmcDelta
        };
        out.push(est(kind, &model, n));
        let bitsnap = BitsnapModel::of(sample, base, w, work.changed, raw.clone());
        out.push(est(Candidate::Bitsnap, &|l| bitsnap.bytes(l), n));
    }
    if let Some(f) = crate::choice::float_format(dtype) {
        let nz = NeuzipModel::of(&raw.top, f);
        out.push(est(Candidate::Neuzip, &|l| nz.bytes(l), n));
    }
    out.push(est(Candidate::Stored, &|l| l as f64, n));
    out
}

/// The exact sizes of a tensor sampled whole (at most [`WHOLE_SAMPLE`] bytes): every candidate
/// that applies, encoded — a few KiB each, cheaper than its statistics.
fn exact(dtype: Dtype, data: &[u8], base: Option<&[u8]>, work: &mut Work) -> Vec<Estimate> {
    let mut kinds = vec![Candidate::Lmc];
    if let Some(base) = base {
        kinds.push(if data == base {
            Candidate::Unchanged
        } else {
            Candidate::LmcDelta
        });
        kinds.push(Candidate::Bitsnap);
    }
    if crate::choice::float_format(dtype).is_some() {
        kinds.push(Candidate::Neuzip);
    }
    kinds.push(Candidate::Stored);
    let (payload, scratch) = (&mut *work.payload, &mut *work.scratch);
    kinds
        .into_iter()
        .map(|candidate| {
            payload.clear();
            let frame_base = base.filter(|_| candidate.is_delta());
            candidate
                .codec(dtype)
                .encode_frame_with(data, frame_base, payload, scratch);
            let bytes = if data.is_empty() {
                0.0
            } else {
                payload.len() as f64
            };
            Estimate {
                candidate,
                sample: bytes,
                full: bytes,
                trial: true,
            }
        })
        .collect()
}

/// Trial-encodes the sample with the candidates predicted within [`TRIAL_MARGIN`] of the
/// smallest (as [`pick`] weighs them) (when there are two or more; never NeuZip, see the module doc, nor stored, whose size
/// is exact) and corrects their predictions.
fn trial(
    dtype: Dtype,
    estimates: &mut [Estimate],
    sample: &[u8],
    base: Option<&[u8]>,
    work: &mut Work,
) {
    let best = estimates
        .iter()
        .map(Estimate::weighed)
        .fold(f64::INFINITY, f64::min);
    let close = |e: &Estimate| e.weighed() <= best * (1.0 + TRIAL_MARGIN);
    if sample.is_empty() || estimates.iter().filter(|e| close(e)).count() < 2 {
        return;
    }
    let (payload, scratch) = (&mut *work.payload, &mut *work.scratch);
    for e in estimates.iter_mut() {
        if !close(e) || matches!(e.candidate, Candidate::Neuzip | Candidate::Stored) {
            continue;
        }
        let frame_base = if e.candidate.is_delta() { base } else { None };
        payload.clear();
        e.candidate
            .codec(dtype)
            .encode_frame_with(sample, frame_base, payload, scratch);
        if e.sample > 0.0 {
            e.full *= payload.len() as f64 / e.sample;
            e.trial = true;
        }
    }
}

/// The statistics predictions of each candidate.
mod predict;

use predict::{BitsnapModel, GroupCosts, NeuzipModel};
#[cfg(test)]
mod tests;
