//! Restoring an Inshrinkerator snapshot through its chain (paper 002 §6): a snapshot names its
//! base by file name and index checksum; restoring looks for it next to the snapshot, or takes the
//! base given, and each base's base next to that base.

use crate::bail;
use crate::error::{Context, Result};
use crate::output::write_output;
use crate::snapshots::open_snapshot;
use crate::source::Source;
use bitlens_snapshot::inshrink::{self as ins, Annex, Levels};
use bitlens_snapshot::{SnapshotError, SnapshotReader};
use std::io::Write;
use std::path::Path;

/// Longest chain of bases followed when restoring.
const MAX_CHAIN: usize = 10_000;

/// The restored levels of the snapshot at `path` (opened as `reader`), after its chain:
/// its base is `explicit` or the file its annex names next to `path`.
pub(super) fn chain_levels(
    path: &Path,
    reader: &SnapshotReader<Source>,
    explicit: Option<&Path>,
    depth: usize,
) -> Result<(Levels, Annex)> {
    let ctx = || path.display().to_string();
    let annex = Annex::of(reader)
        .with_context(ctx)?
        .ok_or(ins::InshrinkError::NotInshrink)
        .with_context(ctx)?;
    let base = match &annex.base {
        None => None,
        Some(link) => {
            if depth >= MAX_CHAIN {
                bail!(
                    "{}: chain of more than {MAX_CHAIN} snapshots",
                    path.display()
                );
            }
            let base_path = match explicit {
                Some(p) => p.to_path_buf(),
                None => path.parent().unwrap_or(Path::new(".")).join(&link.name),
            };
            if !base_path.exists() {
                bail!(
                    "{}: its base snapshot `{}` is not at {}: pass it with --base",
                    path.display(),
                    link.name,
                    base_path.display()
                );
            }
            let (base_reader, _) = open_snapshot(&base_path)?;
            if base_reader.index_checksum != link.index_checksum {
                return Err(ins::InshrinkError::WrongBase(format!(
                    "{} has index checksum {:016x}, {} was made against `{}` with {:016x}",
                    base_path.display(),
                    base_reader.index_checksum,
                    path.display(),
                    link.name,
                    link.index_checksum
                ))
                .into());
            }
            Some(chain_levels(&base_path, &base_reader, None, depth + 1)?.0)
        }
    };
    let levels = ins::decode_levels(reader, base.as_ref()).with_context(ctx)?;
    Ok((levels, annex))
}

/// `bitlens decompress` of an inshrink snapshot: the safetensors file with the restored values.
pub fn decompress(
    input: &Path,
    reader: &SnapshotReader<Source>,
    output: &Path,
    base: Option<&Path>,
) -> Result<u64> {
    let (levels, _) = chain_levels(input, reader, base, 0)?;
    let mut written = 0u64;
    write_output(output, |out| {
        ins::decode_all(reader, &levels, &mut |b: &[u8]| {
            out.write_all(b).map_err(SnapshotError::from)?;
            written += b.len() as u64;
            Ok(())
        })
        .with_context(|| input.display().to_string())
    })?;
    Ok(written)
}
