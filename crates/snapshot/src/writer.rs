//! Streaming snapshot writer: preamble first, frames as they are encoded, index and trailer last.
//! It never seeks, so the output can be a pipe, and it holds only the frames it is given.

use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{self, BaseRef, Entry, Frame, FLAG_DELTA, FLAG_LOSSY, FRAME_BYTES};
use crate::layout::PieceInfo;
use crate::metrics::ErrorStats;
use bitlens_codecs::float::FloatFormat;
use bitlens_tensors::{Dtype, Header};
use std::io::Write;
use xxhash_rust::xxh3::Xxh3;

/// What to do with one tensor of the input, in the input's tensor order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorPlan {
    /// Tensor name (must match the input header).
    pub name: String,
    /// Codec for its frames.
    pub codec: Codec,
    /// Its byte length.
    pub raw_len: u64,
    /// XOR with the base tensor of the same name before encoding.
    pub delta: bool,
}

/// One frame to encode: the next [`crate::format::frame_bytes`] (or fewer, for the last) of a
/// tensor.
#[derive(Debug, Clone, Copy)]
pub struct FrameJob<'a> {
    /// Index of the tensor in the plan.
    pub tensor: usize,
    /// The original bytes.
    pub raw: &'a [u8],
    /// The base tensor's bytes at the same position (delta tensors only).
    pub base: Option<&'a [u8]>,
}

/// Writes a snapshot to any [`Write`].
pub struct SnapshotWriter<W: Write> {
    out: W,
    pos: u64,
    frames_start: u64,
    entries: Vec<Entry>,
    hashers: Vec<Xxh3>,
    base_hashers: Vec<Xxh3>,
    fed: Vec<u64>,
    /// Length of each tensor's first frame (0 before it): every later frame but the last has it.
    frame_len: Vec<u64>,
    errors: Vec<ErrorStats>,
    /// One set of buffers per frame given to [`SnapshotWriter::write_frames`] at once, kept
    /// from call to call so that encoding touches no fresh memory after the first.
    slots: Vec<Encoded>,
}

/// One frame encoded ([`encode_frame`]), in buffers reused from frame to frame.
#[derive(Default)]
pub(crate) struct Encoded {
    /// The encoded payload.
    payload: Vec<u8>,
    /// What a lossy payload decodes to.
    decoded: Vec<u8>,
}

impl crate::pipeline::Slot for Encoded {
    fn trim(&mut self, keep: usize) {
        for b in [&mut self.payload, &mut self.decoded] {
            crate::pipeline::Slot::trim(b, keep);
        }
    }
}

/// The dtype whose values a lossy codec's float format approximates.
fn value_dtype(format: FloatFormat) -> Dtype {
    match format {
        FloatFormat::Bf16 => Dtype::BF16,
        FloatFormat::F16 => Dtype::F16,
        FloatFormat::F32 => Dtype::F32,
    }
}

impl<W: Write> SnapshotWriter<W> {
    /// Starts a snapshot of the safetensors file whose first `8 + N` bytes are `prefix`, with one
    /// plan per tensor in the header's order. `base` is required when any plan is a delta.
    pub fn new(
        out: W,
        prefix: &[u8],
        plans: Vec<TensorPlan>,
        base: Option<BaseRef>,
    ) -> Result<Self, SnapshotError> {
        let data_len: u64 = plans.iter().map(|p| p.raw_len).sum();
        let header = Header::parse(prefix, prefix.len() as u64 + data_len)?;
        if header.data_start() != prefix.len() as u64 {
            return Err(SnapshotError::Misuse(format!(
                "prefix is {} bytes but the header ends at {}",
                prefix.len(),
                header.data_start()
            )));
        }
        check_plans_match(&header, &plans)?;
        Self::start(out, format::VERSION, prefix, plans, None, base, None)
    }

    /// [`SnapshotWriter::new`] for a version 4 snapshot: the preamble also carries `annex`
    /// (snapshot-wide data of a codec, [`crate::inshrink::Annex`]). No XOR base.
    pub fn new_with_annex(
        out: W,
        prefix: &[u8],
        plans: Vec<TensorPlan>,
        annex: &[u8],
    ) -> Result<Self, SnapshotError> {
        if annex.len() as u64 > format::MAX_ANNEX {
            return Err(SnapshotError::Misuse(format!(
                "annex of {} bytes",
                annex.len()
            )));
        }
        let data_len: u64 = plans.iter().map(|p| p.raw_len).sum();
        let header = Header::parse(prefix, prefix.len() as u64 + data_len)?;
        check_plans_match(&header, &plans)?;
        Self::start(
            out,
            format::VERSION_4,
            prefix,
            plans,
            None,
            None,
            Some(annex),
        )
    }

    /// Starts a version 3 snapshot of a file of any format: `pieces` is its piece table
    /// ([`crate::layout`]: name, description, length per piece, in file order), `kind` the format's
    /// name, `file_size` the file's size; one plan per piece, in that order.
    pub fn new_pieces(
        out: W,
        kind: &str,
        pieces: &[(String, PieceInfo, u64)],
        file_size: u64,
        plans: Vec<TensorPlan>,
        base: Option<BaseRef>,
    ) -> Result<Self, SnapshotError> {
        let header = crate::layout::piece_header(pieces, file_size)?;
        check_plans_match(&header, &plans)?;
        let mut description = file_size.to_le_bytes().to_vec();
        description.extend_from_slice(kind.as_bytes());
        if description.len() as u64 > format::MAX_DESCRIPTION {
            return Err(SnapshotError::Misuse(format!(
                "format name of {} bytes",
                kind.len()
            )));
        }
        let infos = pieces.iter().map(|p| p.1.clone()).collect();
        Self::start(
            out,
            format::VERSION_3,
            &description,
            plans,
            Some(infos),
            base,
            None,
        )
    }

    fn start(
        mut out: W,
        version: u32,
        prefix: &[u8],
        plans: Vec<TensorPlan>,
        pieces: Option<Vec<PieceInfo>>,
        base: Option<BaseRef>,
        annex: Option<&[u8]>,
    ) -> Result<Self, SnapshotError> {
        let delta = plans.iter().any(|p| p.delta);
        if delta != base.is_some() {
            return Err(SnapshotError::Misuse(
                "a base is given exactly when some tensor is a delta".into(),
            ));
        }
        let flags = if plans.iter().any(|p| p.codec.is_lossy()) {
            FLAG_LOSSY
        } else {
            0
        } | if delta { FLAG_DELTA } else { 0 };
        let mut preamble = Vec::with_capacity(prefix.len() + 48);
        format::write_preamble(version, prefix, flags, base, &mut preamble);
        if let Some(a) = annex {
            format::write_annex(a, &mut preamble);
        }
        out.write_all(&preamble)?;
        let n = plans.len();
        let mut pieces = pieces.map(Vec::into_iter);
        Ok(SnapshotWriter {
            out,
            pos: preamble.len() as u64,
            frames_start: preamble.len() as u64,
            entries: plans
                .into_iter()
                .map(|p| Entry {
                    name: p.name,
                    codec: p.codec,
                    delta: p.delta,
                    raw_len: p.raw_len,
                    checksum: 0,
                    base_checksum: 0,
                    frames: Vec::new(),
                    error: None,
                    piece: pieces.as_mut().and_then(Iterator::next),
                })
                .collect(),
            hashers: (0..n).map(|_| Xxh3::new()).collect(),
            base_hashers: (0..n).map(|_| Xxh3::new()).collect(),
            fed: vec![0; n],
            frame_len: vec![0; n],
            errors: vec![ErrorStats::default(); n],
            slots: Vec::new(),
        })
    }

    /// Encodes and appends frames, in order. Frames are encoded in parallel (feature `parallel`),
    /// written in the order given; each tensor's frames must come in order, at most
    /// [`FRAME_BYTES`] long and all as long as its first but the last (which may be shorter), so
    /// that the output never depends on how the caller batches work or on the thread count
    /// ([`crate::compress()`] cuts tensors into frames of [`crate::format::frame_bytes`] and
    /// runs them through its own pipeline: [`encode_frame`] on any thread, then
    /// [`SnapshotWriter::append_frame`] in order). Nothing is written if a frame is out of place.
    pub fn write_frames(&mut self, jobs: &[FrameJob]) -> Result<(), SnapshotError> {
        let (mut fed, mut frame_len) = (self.fed.clone(), self.frame_len.clone());
        for job in jobs {
            check_frame(&self.entries, (&mut fed, &mut frame_len), job)?;
        }
        if self.slots.len() < jobs.len() {
            self.slots.resize_with(jobs.len(), Encoded::default);
        }
        let mut slots = std::mem::take(&mut self.slots);
        let entries = &self.entries;
        let encoded = encode_all(jobs, &mut slots[..jobs.len()], |job, slot, scratch| {
            let e = &entries[job.tensor];
            encode_frame(&e.codec, &e.name, job, slot, scratch)
        });
        let appended = encoded.and_then(|()| {
            jobs.iter()
                .zip(&slots)
                .try_for_each(|(job, slot)| self.append_frame(job, slot))
        });
        self.slots = slots;
        appended
    }

    /// Appends frame `job`, encoded into `encoded` by [`encode_frame`] with this tensor's codec:
    /// checks that it comes next for its tensor, feeds the checksums (and the error report of a
    /// lossy codec) and writes its payload.
    pub(crate) fn append_frame(
        &mut self,
        job: &FrameJob,
        encoded: &Encoded,
    ) -> Result<(), SnapshotError> {
        check_frame(&self.entries, (&mut self.fed, &mut self.frame_len), job)?;
        let entry = &self.entries[job.tensor];
        // A lossy tensor's checksum covers what decoding will produce.
        match lossy_format(&entry.codec) {
            Some(format) => {
                self.hashers[job.tensor].update(&encoded.decoded);
                self.errors[job.tensor]
                    .add_bytes(value_dtype(format), job.raw, &encoded.decoded)
                    .map_err(|err| {
                        SnapshotError::Misuse(format!("tensor `{}`: {err}", entry.name))
                    })?;
            }
            None => self.hashers[job.tensor].update(job.raw),
        }
        if let Some(b) = job.base {
            self.base_hashers[job.tensor].update(b);
        }
        self.out.write_all(&encoded.payload)?;
        self.entries[job.tensor].frames.push(Frame {
            offset: self.pos,
            stored_len: encoded.payload.len() as u64,
            raw_len: job.raw.len() as u64,
        });
        self.pos += encoded.payload.len() as u64;
        Ok(())
    }

    /// Appends the next frame of tensor `tensor` as a payload its codec encoded elsewhere (an
    /// Inshrinkerator stream, [`crate::inshrink`]): `raw` is the frame's original bytes,
    /// `decoded` what the payload decodes to (checksummed, and compared with `raw` for the error
    /// report of a lossy codec).
    pub fn write_encoded(
        &mut self,
        tensor: usize,
        raw: &[u8],
        payload: &[u8],
        decoded: &[u8],
    ) -> Result<(), SnapshotError> {
        let (mut fed, mut frame_len) = (self.fed.clone(), self.frame_len.clone());
        let job = FrameJob {
            tensor,
            raw,
            base: None,
        };
        check_frame(&self.entries, (&mut fed, &mut frame_len), &job)?;
        let entry = &self.entries[tensor];
        if decoded.len() != raw.len() {
            return Err(SnapshotError::Misuse(format!(
                "tensor `{}`: a frame of {} bytes decodes to {}",
                entry.name,
                raw.len(),
                decoded.len()
            )));
        }
        match entry.codec.value_format() {
            Some(format) if entry.codec.is_lossy() => {
                self.hashers[tensor].update(decoded);
                self.errors[tensor]
                    .add_bytes(value_dtype(format), raw, decoded)
                    .map_err(|err| {
                        SnapshotError::Misuse(format!("tensor `{}`: {err}", entry.name))
                    })?;
            }
            _ => self.hashers[tensor].update(raw),
        }
        self.out.write_all(payload)?;
        self.entries[tensor].frames.push(Frame {
            offset: self.pos,
            stored_len: payload.len() as u64,
            raw_len: raw.len() as u64,
        });
        self.pos += payload.len() as u64;
        self.fed = fed;
        self.frame_len = frame_len;
        Ok(())
    }

    /// The codec planned for tensor `tensor`.
    pub fn codec_of(&self, tensor: usize) -> Option<Codec> {
        self.entries.get(tensor).map(|e| e.codec)
    }

    /// Writes the index and trailer and returns the output and the index entries.
    pub fn finish(mut self) -> Result<(W, Vec<Entry>), SnapshotError> {
        for (i, e) in self.entries.iter_mut().enumerate() {
            if self.fed[i] != e.raw_len {
                return Err(SnapshotError::Misuse(format!(
                    "tensor `{}`: {} of {} bytes written",
                    e.name, self.fed[i], e.raw_len
                )));
            }
            e.checksum = self.hashers[i].digest();
            e.base_checksum = if e.delta {
                self.base_hashers[i].digest()
            } else {
                0
            };
            e.error = e.codec.is_lossy().then(|| self.errors[i].report());
        }
        let mut index = Vec::new();
        format::write_index(&self.entries, &mut index);
        let mut tail = Vec::with_capacity(index.len() + 32);
        tail.extend_from_slice(&index);
        format::write_trailer(self.pos, &index, &mut tail);
        self.out.write_all(&tail)?;
        self.out.flush()?;
        debug_assert!(self.pos >= self.frames_start);
        Ok((self.out, self.entries))
    }
}

/// Checks that frame `job` comes next for its tensor of `entries` (with base bytes of its length
/// exactly when the tensor is a delta) and counts it in `fed` (bytes given per tensor) and
/// `frame_len` (first frame lengths); neither changes when it does not.
fn check_frame(
    entries: &[Entry],
    (fed, frame_len): (&mut [u64], &mut [u64]),
    job: &FrameJob,
) -> Result<(), SnapshotError> {
    let (tensor, len, with_base) = (job.tensor, job.raw.len(), job.base.is_some());
    if job.base.is_some_and(|b| b.len() != len) {
        return Err(SnapshotError::Misuse(
            "base bytes must have the frame's length".into(),
        ));
    }
    let entry = entries
        .get(tensor)
        .ok_or_else(|| SnapshotError::Misuse(format!("no tensor #{tensor} in the plan")))?;
    let after = fed[tensor] + len as u64;
    let is_last = after == entry.raw_len;
    let frame = match frame_len[tensor] {
        0 => len as u64,
        f => f,
    };
    if len == 0
        || after > entry.raw_len
        || (!is_last && len as u64 != frame)
        || len as u64 > frame
        || len > FRAME_BYTES
    {
        return Err(SnapshotError::Misuse(format!(
            "tensor `{}`: frame of {len} bytes at {} (tensor has {}, its frames are {frame} bytes, at most {FRAME_BYTES})",
            entry.name, fed[tensor], entry.raw_len
        )));
    }
    if entry.delta != with_base {
        return Err(SnapshotError::Misuse(format!(
            "tensor `{}`: base bytes must be given exactly for delta tensors",
            entry.name
        )));
    }
    fed[tensor] = after;
    frame_len[tensor] = frame;
    Ok(())
}

/// The plan must list the header's tensors, in its order, with their lengths.
fn check_plans_match(header: &Header, plans: &[TensorPlan]) -> Result<(), SnapshotError> {
    if header.tensors.len() != plans.len() {
        return Err(SnapshotError::Misuse(format!(
            "header has {} tensors, plan has {}",
            header.tensors.len(),
            plans.len()
        )));
    }
    for (t, p) in header.tensors.iter().zip(plans) {
        if t.name != p.name || t.byte_len() != p.raw_len {
            return Err(SnapshotError::Misuse(format!(
                "plan entry `{}` ({} bytes) does not match header tensor `{}` ({} bytes)",
                p.name,
                p.raw_len,
                t.name,
                t.byte_len()
            )));
        }
    }
    Ok(())
}

/// The value format whose decoded values a lossy codec's checksum and error report cover; `None`
/// when the checksum covers the original bytes.
fn lossy_format(codec: &Codec) -> Option<FloatFormat> {
    codec.value_format().filter(|_| codec.is_lossy())
}

/// Encodes frame `job` of tensor `name` with `codec` into `slot` (and, for lossy codecs, decodes
/// it back into the slot, for the checksum and the error report); `scratch` holds a delta
/// frame's XOR with its base. Runs on any thread: [`SnapshotWriter::append_frame`] takes the
/// result in order.
pub(crate) fn encode_frame(
    codec: &Codec,
    name: &str,
    job: &FrameJob,
    slot: &mut Encoded,
    scratch: &mut Vec<u8>,
) -> Result<(), SnapshotError> {
    codec.encode_frame_with(job.raw, job.base, &mut slot.payload, scratch);
    if codec.is_lossy() {
        codec
            .decode_frame_into(&slot.payload, job.raw.len(), job.base, &mut slot.decoded)
            .map_err(|err| {
                SnapshotError::Misuse(format!(
                    "tensor `{name}`: own lossy frame does not decode: {err}"
                ))
            })?;
    }
    Ok(())
}

/// Encodes `jobs` into `slots` (one each) with `encode`, in parallel with feature `parallel`.
fn encode_all(
    jobs: &[FrameJob],
    slots: &mut [Encoded],
    encode: impl Fn(&FrameJob, &mut Encoded, &mut Vec<u8>) -> Result<(), SnapshotError> + Sync,
) -> Result<(), SnapshotError> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        jobs.par_iter()
            .zip(slots.par_iter_mut())
            .try_for_each_init(Vec::new, |scratch, (j, slot)| encode(j, slot, scratch))
    }
    #[cfg(not(feature = "parallel"))]
    {
        let mut scratch = Vec::new();
        jobs.iter()
            .zip(slots.iter_mut())
            .try_for_each(|(j, slot)| encode(j, slot, &mut scratch))
    }
}
