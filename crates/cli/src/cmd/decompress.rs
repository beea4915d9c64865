//! `bitlens decompress`: a snapshot, a directory of shard snapshots or a URL back to the original
//! files (`bitlens_engine::decompress`), or a chain directory (`bitlens_engine::chain`), with its
//! options checked.

use crate::cmd::compress::summary;
use crate::io::progress::Terminal;
use anyhow::{bail, Result};
use bitlens_snapshot::chain::MANIFEST_NAME;
use std::path::Path;
use std::time::Instant;

/// Runs `bitlens decompress`.
pub fn run(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
    step: Option<&str>,
) -> Result<()> {
    if bitlens_engine::chain::is_chain(input) {
        if base.is_some() || tensor.is_some() {
            bail!("--base and --tensor do not apply to a chain directory");
        }
        return crate::cmd::chain::decompress(input, output, step);
    }
    if step.is_some() {
        bail!(
            "--step applies to a chain directory (one holding {MANIFEST_NAME}), {} is not",
            input.display()
        );
    }
    let started = Instant::now();
    let totals = bitlens_engine::decompress(input, output, base, tensor, &Terminal::default())?;
    summary("decompressed", &totals, started);
    Ok(())
}
