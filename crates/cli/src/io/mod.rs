//! The CLI's own I/O, the terminal's: progress and notes on stderr ([`progress`]), and one JSON
//! document on stdout ([`print_json`]). Files and URLs are the engine's (`bitlens_engine`).

pub mod progress;

use anyhow::Result;
use std::io::Write;

/// Prints `document` as one line of JSON on stdout.
pub fn print_json<T: serde::Serialize>(document: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, document)?;
    writeln!(out)?;
    Ok(())
}
