//! `bitlens decompress`: a snapshot, a directory of shard snapshots, a URL or a chain directory
//! back to the original files (`bitlens_engine::decompress::restore`, which checks the options),
//! then a line of sizes and speed.

use crate::cmd::compress::summary;
use crate::io::progress::Terminal;
use anyhow::Result;
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
    let started = Instant::now();
    let restored = bitlens_engine::decompress::restore(
        input,
        output,
        base,
        tensor,
        step,
        &Terminal::default(),
    )?;
    if let Some(totals) = restored {
        summary("decompressed", &totals, started);
    }
    Ok(())
}
