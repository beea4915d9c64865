//! The weight map's requests: the cells of a window of one tensor
//! ([`bitlens_stats::weightmap::weight_map`]) and a few of its lanes exactly
//! ([`bitlens_stats::weightmap::elements`]), read synchronously from a local file
//! (`FileReaderSync`, no read-ahead: each piece is read once) or a URL (exact range requests), so
//! a remote tensor's map fetches that tensor's bytes only.

use crate::error::Failure;
use crate::source::FileSource;
use bitlens_protocol::js::Js;
use bitlens_protocol::{FileRef, JobResult};
use bitlens_stats::weightmap::{self, Layer, Window, LOCAL_GAP, REMOTE_GAP};
use bitlens_tensors::format::Entry;

/// Opens a file of a map request: a local file without read-ahead, or a URL.
fn open(file: FileRef<Js>) -> Result<(FileSource, u64), Failure> {
    let gap = match file {
        FileRef::Blob(_) => LOCAL_GAP,
        FileRef::Url(_) => REMOTE_GAP,
    };
    Ok((FileSource::open(file)?.read_ahead(0), gap))
}

/// The cells of `window` of `entry` in `file` for `layer` (`other`: the changes layer's second
/// checkpoint).
pub fn weight_map(
    file: FileRef<Js>,
    entry: &Entry,
    other: Option<(FileRef<Js>, Entry)>,
    window: &Window,
    layer: Layer,
) -> Result<JobResult, Failure> {
    let (src, gap) = open(file)?;
    let other = other
        .map(|(f, e)| open(f).map(|(s, g)| (s, g, e)))
        .transpose()?;
    let gap = other.as_ref().map_or(gap, |(_, g, _)| gap.max(*g));
    let tile = weightmap::weight_map(
        &src,
        entry,
        other
            .as_ref()
            .map(|(s, _, e)| (s as &dyn bitlens_tensors::ReadAt, e)),
        window,
        layer,
        gap,
    )
    .map_err(|e| src.named(format!("{}: {e}", entry.name)))?;
    Ok(JobResult::WeightMap(Box::new(tile)))
}

/// Lanes `start..start + count` of `entry` in `file`, exactly.
pub fn elements(
    file: FileRef<Js>,
    entry: &Entry,
    start: u64,
    count: u64,
) -> Result<JobResult, Failure> {
    let (src, _) = open(file)?;
    let lanes = weightmap::elements(&src, entry, start, count)
        .map_err(|e| src.named(format!("{}: {e}", entry.name)))?;
    Ok(JobResult::Elements(lanes))
}
