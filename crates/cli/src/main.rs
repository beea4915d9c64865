//! The native `bitlens` command: look inside safetensors checkpoints from the terminal.
//!
//! I/O lives here (files, threads, progress bars); the statistics come from `bitlens-stats` and the
//! format from `bitlens-tensors`. Errors are reported once, as one line on stderr, with exit code 1.

mod analyze;
mod diff;
mod format;
mod inspect;
mod progress;
mod source;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Look inside neural-network checkpoints: bits, entropy, changes between checkpoints.
#[derive(Parser)]
#[command(name = "bitlens", version, about)]
struct Cli {
    /// Worker threads (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per-tensor dtype, shape, bit-set ratios, entropies and predicted compressed size.
    Inspect {
        /// A .safetensors file, a *.safetensors.index.json, or a directory of shards.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Bit-flip ratio per bit position and changed fraction between two checkpoints.
    Diff {
        /// The earlier checkpoint (file, index or directory).
        a: PathBuf,
        /// The later checkpoint (file, index or directory).
        b: PathBuf,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
}

fn run(cli: Cli) -> Result<()> {
    if let Some(n) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()?;
    }
    match cli.command {
        Command::Inspect { paths, json } => inspect::run(&paths, json),
        Command::Diff { a, b, json } => diff::run(&a, &b, json),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bitlens: {e:#}");
            ExitCode::FAILURE
        }
    }
}
