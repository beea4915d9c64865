//! The native `bitlens` command: look inside checkpoints (safetensors, GGUF, PyTorch, NumPy) from
//! the terminal.
//!
//! The commands run in `bitlens-engine` (files, URLs, the thread pool, the reports); this crate
//! parses the command line ([`Cli`]), checks which options go together, and prints — tables, one
//! JSON document, progress on stderr. One module per command under [`cmd`], the terminal under
//! [`io`]. Errors are reported once, as one line on stderr, with exit code 1.

mod cmd;
mod io;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Large buffers in transparent huge pages: fewer first-touch page faults (`bitlens_hugepages`).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: bitlens_hugepages::HugePageAlloc = bitlens_hugepages::HugePageAlloc;

/// Look inside neural-network checkpoints: bits, entropy, changes between checkpoints.
#[derive(Parser)]
#[command(name = "bitlens", version, about)]
struct Cli {
    /// Worker threads (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// Read a remote file of at most 64 MiB whole when its server ignores Range requests.
    #[arg(long, global = true)]
    download_small: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Per-tensor dtype, shape, bit-set ratios, entropies and predicted compressed size.
    Inspect {
        /// A checkpoint file (.safetensors, .gguf, PyTorch .pt/.bin, NumPy .npy/.npz: told by its
        /// first bytes), a *.safetensors.index.json, a directory of shards (or, without
        /// safetensors, of GGUF / PyTorch / .npz files: each a checkpoint; its .npy files: one
        /// checkpoint, arrays named by file stem), a .bls snapshot, a chain directory, or an
        /// http(s) URL of a file, index or snapshot.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Read every tensor of a remote file even when a sidecar next to it (`<url>.bitlens.json`,
        /// made by `bitlens sidecar`) matches the file's size and header.
        #[arg(long)]
        no_sidecar: bool,
    },
    /// Write each checkpoint file's statistics once into its sidecar, `<file>.bitlens.json`: the
    /// `inspect --json` document of the file with its size and header hash, which `inspect URL`,
    /// the page and the embed show without reading the tensors. A sidecar that already matches
    /// its file is kept.
    Sidecar {
        /// Checkpoint files (any format `inspect` reads) or http(s) URLs of files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Write the sidecars under this directory: `DIR/<file name>.bitlens.json` for a file,
        /// `DIR/<host>/<path>.bitlens.json` for a URL (required for URLs). Default: beside each
        /// file.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Write every sidecar again, even one that matches its file.
        #[arg(long)]
        force: bool,
    },
    /// Bit-flip ratio per bit position and changed fraction between two checkpoints (of any
    /// format `inspect` reads).
    Diff {
        /// The earlier checkpoint (file, index, directory or http(s) URL).
        a: PathBuf,
        /// The later checkpoint (file, index, directory or http(s) URL).
        b: PathBuf,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Compress a checkpoint into a bitlens snapshot (a directory of snapshots for shards).
    Compress {
        /// A .safetensors file, a *.safetensors.index.json, or a directory of shards.
        input: PathBuf,
        /// The snapshot file (or directory, for a sharded checkpoint) to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Codec for every tensor (float-only codecs use LMC for other dtypes).
        #[arg(long, value_enum, default_value = "lmc")]
        codec: cmd::compress::CodecName,
        /// NeuZip: mantissa bits to keep, 0, 1 or 3 (lossy); default all (lossless).
        #[arg(long)]
        mantissa_bits: Option<u32>,
        /// NeuZip lossy: block size of the block-wise normalization (32..512).
        #[arg(long, default_value_t = 512)]
        norm_block: usize,
        /// BitSnap quant: clusters (at most 16, labels are 4 bits).
        #[arg(long, default_value_t = 16)]
        clusters: u8,
        /// Store each tensor as its XOR with the base checkpoint's tensor of the same name
        /// (inshrink: the previous .bls snapshot of the chain; the search starts from its plan
        /// and the tensors are deltas of its levels).
        #[arg(long)]
        base: Option<PathBuf>,
        /// Inshrink: the model-free quality threshold, every lossy tensor's relative L2 error
        /// ‖w − ŵ‖ / ‖w‖ at most this. Stricter than the paper's loss threshold: a tensor that
        /// misses it at its group's setting gets more bins on its own (beyond the paper's 32, up
        /// to 253) or is stored lossless (LMC); a tensor is never stored larger than by LMC.
        #[arg(long)]
        max_error: Option<f64>,
        /// Inshrink: the evaluation command run on every candidate (`{}` is replaced by the path
        /// of a safetensors file of the original dtypes); the loss is the last number it prints.
        /// Searches the paper's grid (4–32 bins) per layer group; a group nothing passes for is
        /// stored lossless (LMC).
        #[arg(long)]
        eval_cmd: Option<String>,
        /// Inshrink with --eval-cmd: accept when (loss − original loss) / original loss ≤ this.
        #[arg(long)]
        max_degradation: Option<f64>,
        /// Inshrink: an Adam optimizer state (`exp_avg_sq.<name>` tensors, safetensors) whose
        /// second moment ranks weights by sensitivity |w|·sqrt(v).
        #[arg(long)]
        optimizer: Option<PathBuf>,
        /// Inshrink: how protected values are stored.
        #[arg(long, value_enum, default_value = "original")]
        protect_dtype: cmd::inshrink::ProtectDtype,
        /// Inshrink with --base: search from the base's plan but store full streams (no delta).
        #[arg(long)]
        no_delta: bool,
        /// Inshrink: print the search report as one JSON document on stdout; auto: each
        /// tensor's predicted sizes, choice and achieved size.
        #[arg(long)]
        json: bool,
        /// Compress a chain of checkpoints into the directory OUTPUT (`chain.json` and
        /// `<step>/<file>.bls`): INPUT is a run directory of step-<number> folders, or INPUT and
        /// the paths after it are the steps in training order (files or folders). Each file is a
        /// delta against the same file of the previous step.
        #[arg(long)]
        chain: bool,
        /// With --chain: the steps after INPUT.
        #[arg(requires = "chain")]
        more: Vec<PathBuf>,
        /// With --chain: every Nth step stored in full (1: every step; default: the first only).
        #[arg(long, requires = "chain")]
        key: Option<usize>,
        /// With --chain: do not also compress each delta's file in full to measure what the
        /// deltas save (`inspect` then shows no all-full total).
        #[arg(long, requires = "chain")]
        skip_full_size: bool,
    },
    /// Restore the original safetensors file(s) from a snapshot, byte for byte.
    Decompress {
        /// A snapshot file, a directory of snapshots, or an http(s) URL of a snapshot file.
        input: PathBuf,
        /// The safetensors file (or directory) to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The base checkpoint, for delta snapshots (inshrink: the previous snapshot of the
        /// chain, when it is not next to the input under the name the input records).
        #[arg(long)]
        base: Option<PathBuf>,
        /// Restore only this tensor, as a safetensors file holding just it.
        #[arg(long)]
        tensor: Option<String>,
        /// A chain directory: restore only this step (its name or 0-based index), its files
        /// into the directory OUTPUT; without it every step goes to OUTPUT/<step>/.
        #[arg(long)]
        step: Option<String>,
    },
    /// Compare bitlens's codecs with zstd, lz4, deflate, bzip2 and the hub's bg4-lz4 on the same
    /// tensors.
    Bench {
        /// A .safetensors file, a *.safetensors.index.json, or a directory of shards.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Only these codecs (comma-separated): snapshot (the whole container on each file),
        /// lmc, neuzip, neuzip-k3, neuzip-k1, neuzip-k0, bitsnap-quant, zstd-1, zstd-3, zstd-19,
        /// lz4, deflate, bzip2, bg4-lz4 (per tensor, and each whole file as the hub stores it).
        #[arg(long, value_delimiter = ',')]
        codecs: Vec<String>,
        /// Passes per codec; the fastest counts.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
}

fn run(cli: Cli) -> Result<()> {
    bitlens_engine::http::allow_small_downloads(cli.download_small);
    // The main thread is one of the pool's workers (`use_current_thread`): on one thread no
    // other is started, and on more the work does not wait for a thread started to run it while
    // this one sleeps. Starting that thread, its allocator arena and the hand-offs cost 0.2–0.35
    // ms a run, 4–6 % of decompressing a 13 MB checkpoint (BENCHMARKS.md, "The main thread
    // works"). 0 threads is rayon's default: all cores (or `RAYON_NUM_THREADS`).
    rayon::ThreadPoolBuilder::new()
        .num_threads(cli.threads.map_or(0, |n| n.max(1)))
        .use_current_thread()
        .build_global()?;
    match cli.command {
        Command::Inspect {
            paths,
            json,
            no_sidecar,
        } => cmd::inspect::run(&paths, json, no_sidecar),
        Command::Sidecar { paths, dir, force } => cmd::sidecar::run(&paths, dir.as_deref(), force),
        Command::Diff { a, b, json } => cmd::diff::run(&a, &b, json),
        Command::Compress {
            input,
            output,
            codec,
            mantissa_bits,
            norm_block,
            clusters,
            base,
            max_error,
            eval_cmd,
            max_degradation,
            optimizer,
            protect_dtype,
            no_delta,
            json,
            chain,
            more,
            key,
            skip_full_size,
        } => cmd::compress::run(&bitlens_engine::plan::CompressArgs {
            input,
            output,
            codec: codec.into(),
            mantissa_bits,
            norm_block,
            clusters,
            base,
            max_error,
            eval_cmd,
            max_degradation,
            optimizer,
            protect: protect_dtype.storage(),
            no_delta,
            json,
            chain,
            more,
            key,
            skip_full_size,
        }),
        Command::Decompress {
            input,
            output,
            base,
            tensor,
            step,
        } => cmd::decompress::run(
            &input,
            &output,
            base.as_deref(),
            tensor.as_deref(),
            step.as_deref(),
        ),
        Command::Bench {
            paths,
            json,
            codecs,
            repeat,
        } => cmd::bench::run(&paths, json, &codecs, repeat),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bitlens: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line (the engine's rule, which the Python package's exceptions
/// share).
fn one_line(e: &anyhow::Error) -> String {
    bitlens_engine::error::one_line(e.as_ref())
}
