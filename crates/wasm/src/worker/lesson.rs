//! The lessons' computations that run in a worker rather than on the page's thread, so their
//! code stays out of the page's module: the lossy lesson's survey of the lossy codecs (NeuZip
//! §2.3, BitSnap §3.4; [`bitlens_lessons::lossy::survey`]) and its Inshrinkerator view
//! (paper 002 §4.4, Table 7), non-uniform against uniform bins on one tensor
//! ([`bitlens_lessons::bins::bins_lesson`]).

use crate::error::Failure;
use crate::source::FileSource;
use bitlens_codecs::float::FloatFormat;
use bitlens_inshrink::{values, NonUniform};
use bitlens_lessons::bins::{self, BinsLesson, Fit};
use bitlens_lessons::lossy;
use bitlens_protocol::js::Js;
use bitlens_protocol::{BinsFewest, BinsFit, BinsReport, BinsRow, FileRef, JobResult};
use bitlens_tensors::{Dtype, ReadAt};

/// Bytes `offset..offset + bytes` of `file` (a local file or a URL: one range request).
fn read(file: FileRef<Js>, offset: u64, bytes: u64) -> Result<Vec<u8>, Failure> {
    let src = FileSource::open(file)?;
    if offset.saturating_add(bytes) > src.size() {
        return Err(src.named(format!(
            "bytes {offset}..{} lie past the file's end ({} bytes)",
            offset.saturating_add(bytes),
            src.size()
        )));
    }
    let len = usize::try_from(bytes)
        .map_err(|_| Failure(format!("{bytes} bytes do not fit in this worker's memory")))?;
    let mut data = vec![0u8; len];
    src.read_exact_at(offset, &mut data)
        .map_err(|e| src.named(e))?;
    Ok(data)
}

/// The view's figures for the values in bytes `offset..offset + bytes` of `file` (`dtype`: f32,
/// f16 or bf16) with the non-uniform quantizer's `β` = `balance` (refused outside [0, 1]).
pub fn inshrink_bins(
    file: FileRef<Js>,
    offset: u64,
    bytes: u64,
    dtype: Dtype,
    balance: f64,
) -> Result<JobResult, Failure> {
    if !(0.0..=1.0).contains(&balance) {
        return Err(Failure(format!("β = {balance} is not in [0, 1]")));
    }
    let data = read(file, offset, bytes)?;
    let values = values::to_f32(&data, dtype).map_err(|e| Failure(e.to_string()))?;
    let quantizer = NonUniform {
        balance,
        ..NonUniform::default()
    };
    Ok(JobResult::Bins(Box::new(report(bins::bins_lesson(
        &values, &quantizer,
    )))))
}

/// Every lossy setting of the lesson measured on the values in bytes `offset..offset + bytes` of
/// `file` (`dtype`: f32, f16 or bf16).
pub fn lossy_survey(
    file: FileRef<Js>,
    offset: u64,
    bytes: u64,
    dtype: Dtype,
) -> Result<JobResult, Failure> {
    let format = match dtype {
        Dtype::F32 => FloatFormat::F32,
        Dtype::F16 => FloatFormat::F16,
        Dtype::BF16 => FloatFormat::Bf16,
        other => {
            return Err(Failure(format!(
                "the lossy lesson measures f32, f16 and bf16 tensors, not {}",
                other.name()
            )))
        }
    };
    let data = read(file, offset, bytes)?;
    let survey = lossy::survey(&data, format).map_err(|e| Failure(e.to_string()))?;
    Ok(JobResult::LossySurvey(Box::new(survey)))
}

/// The crate's figures as the protocol carries them.
pub fn report(l: BinsLesson) -> BinsReport {
    let fit = |f: Fit| BinsFit {
        centroids: f.centroids,
        rel_l2: f.rel_l2,
        max_abs: f.max_abs,
    };
    BinsReport {
        values: l.values as u64,
        balance: l.balance,
        uniform_limit: bins::UNIFORM_LIMIT as u32,
        lo: l.histogram.lo,
        hi: l.histogram.hi,
        histogram: l.histogram.counts,
        rows: l
            .rows
            .into_iter()
            .map(|r| BinsRow {
                bins: r.bins as u32,
                nonuniform: fit(r.nonuniform),
                uniform: fit(r.uniform),
            })
            .collect(),
        fewest: l
            .fewest
            .iter()
            .map(|f| BinsFewest {
                bins: f.bins as u32,
                error: f.error,
                nonuniform: f.nonuniform as u32,
                uniform: f.uniform.map(|u| u as u32),
            })
            .collect(),
    }
}
