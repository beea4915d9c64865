//! Opening `.bls` snapshots, and `bitlens inspect` of them: what each says of itself (`bitlens_report::snapshot`,
//! read by `bitlens_snapshot::report`).

use crate::error::{Context, Result};
use crate::source::{is_url, Source};
use bitlens_report::snapshot::SnapshotsReport;
use bitlens_snapshot::SnapshotReader;
use bitlens_tensors::ReadAt;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Opens a snapshot file or URL: its reader and its size.
pub fn open_snapshot(input: &Path) -> Result<(SnapshotReader<Source>, u64)> {
    let src = Source::open(input)?;
    let size = bitlens_tensors::ReadAt::size(&src);
    let reader = SnapshotReader::open(src).with_context(|| input.display().to_string())?;
    Ok((reader, size))
}

/// True when the file (or URL: its probe, whose errors are returned) starts with the snapshot
/// magic.
pub fn is_snapshot(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 8];
    if is_url(path)? {
        let src = Source::open(path)?;
        return Ok(
            src.read_exact_at(0, &mut magic).is_ok() && magic == bitlens_snapshot::format::MAGIC
        );
    }
    Ok(File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == bitlens_snapshot::format::MAGIC)
}

/// The report of snapshot files or URLs: codec, sizes and (lossy) error per tensor; an
/// Inshrinkerator snapshot's plan and search.
pub fn inspect_snapshots(paths: &[PathBuf]) -> Result<SnapshotsReport> {
    let snapshots = paths
        .iter()
        .map(|path| {
            let (reader, size) = open_snapshot(path)?;
            bitlens_snapshot::report::snapshot_report(&path.to_string_lossy(), size, &reader)
                .with_context(|| path.display().to_string())
        })
        .collect::<Result<_>>()?;
    Ok(SnapshotsReport { snapshots })
}
