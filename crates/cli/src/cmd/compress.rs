//! `bitlens compress`: its arguments checked and sorted into one of three runs — a snapshot of a
//! checkpoint (`bitlens_engine::compress`, any codec of the container), a chain
//! ([`crate::cmd::chain`]) or an Inshrinkerator search ([`crate::cmd::inshrink`]) — and the lines
//! it prints: sizes and speed, the lossy tensors' error, `auto`'s choices.

use crate::io::print_json;
use crate::io::progress::Terminal;
use anyhow::{bail, Result};
use bitlens_engine::chain::CompressOptions;
use bitlens_engine::inshrink::Args as InshrinkArgs;
use bitlens_engine::Totals;
use bitlens_report::auto::AutoReport;
use bitlens_snapshot::{CodecChoice, CodecKind, Entry};
use bitlens_stats::format;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The codecs `--codec` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CodecName {
    /// LMC / PLMC: byte grouping + block-adaptive Huffman + runs (lossless).
    Lmc,
    /// NeuZip: rANS exponents + raw sign/mantissa; lossy with --mantissa-bits 0, 1 or 3.
    Neuzip,
    /// BitSnap delta against --base: bitmask of changed elements + their new values (lossless).
    Bitsnap,
    /// BitSnap cluster-based uint8 quantization, for optimizer states (lossy).
    BitsnapQuant,
    /// No compression (lossless), for comparison.
    Stored,
    /// Per tensor the smallest of LMC, NeuZip and, with --base, LMC on the XOR, BitSnap delta or
    /// unchanged, predicted from a sample (lossless); --json prints the predictions.
    Auto,
    /// Inshrinkerator: prune / protect / non-uniform bins searched under --max-error or
    /// --eval-cmd/--max-degradation; with --base, a delta against the previous snapshot (lossy).
    Inshrink,
}

impl CodecName {
    /// The container's codec family (`None` for inshrink, which has a path of its own).
    pub fn kind(self) -> Option<CodecKind> {
        Some(match self {
            CodecName::Lmc => CodecKind::Lmc,
            CodecName::Neuzip => CodecKind::Neuzip,
            CodecName::Bitsnap => CodecKind::Bitsnap,
            CodecName::BitsnapQuant => CodecKind::BitsnapQuant,
            CodecName::Stored => CodecKind::Stored,
            CodecName::Auto => CodecKind::Auto,
            CodecName::Inshrink => return None,
        })
    }
}

/// Everything `bitlens compress` was given.
#[derive(Debug, Clone)]
pub struct Args {
    /// The checkpoint (or the first step of a chain).
    pub input: PathBuf,
    /// The snapshot, directory of snapshots, or chain directory to write.
    pub output: PathBuf,
    /// The codec.
    pub codec: CodecName,
    /// NeuZip: kept mantissa bits.
    pub mantissa_bits: Option<u32>,
    /// NeuZip lossy: normalization block.
    pub norm_block: usize,
    /// BitSnap quant: clusters.
    pub clusters: u8,
    /// The base checkpoint (inshrink: the previous snapshot).
    pub base: Option<PathBuf>,
    /// Inshrink: the model-free budget.
    pub max_error: Option<f64>,
    /// Inshrink: the evaluation command.
    pub eval_cmd: Option<String>,
    /// Inshrink: the accepted loss degradation.
    pub max_degradation: Option<f64>,
    /// Inshrink: the optimizer state.
    pub optimizer: Option<PathBuf>,
    /// Inshrink: how protected values are stored.
    pub protect_dtype: crate::cmd::inshrink::ProtectDtype,
    /// Inshrink with a base: full streams.
    pub no_delta: bool,
    /// Print the JSON report (auto, inshrink).
    pub json: bool,
    /// Compress a chain.
    pub chain: bool,
    /// The chain's steps after `input`.
    pub more: Vec<PathBuf>,
    /// Chain: every Nth step a key.
    pub key: Option<usize>,
    /// Chain: do not measure the deltas' files in full.
    pub skip_full_size: bool,
}

/// What a `bitlens compress` command line asks for, once its options are checked.
#[derive(Debug, Clone)]
pub enum Run {
    /// An Inshrinkerator search (paper 002).
    Inshrink(InshrinkArgs),
    /// A chain of checkpoints: the steps in order.
    Chain(Vec<PathBuf>, CodecChoice, CompressOptions),
    /// One checkpoint into a snapshot.
    Snapshot(CodecChoice),
}

/// Checks which options go together and sorts the command into its [`Run`].
pub fn plan(args: &Args) -> Result<Run> {
    let Some(kind) = args.codec.kind() else {
        if args.chain {
            bail!("--codec inshrink does not make --chain chains: use its --base");
        }
        return Ok(Run::Inshrink(InshrinkArgs {
            max_error: args.max_error,
            eval_cmd: args.eval_cmd.clone(),
            max_degradation: args.max_degradation,
            base: args.base.clone(),
            no_delta: args.no_delta,
            optimizer: args.optimizer.clone(),
            protect: args.protect_dtype.storage(),
        }));
    };
    if args.max_error.is_some()
        || args.eval_cmd.is_some()
        || args.max_degradation.is_some()
        || args.optimizer.is_some()
        || args.no_delta
    {
        bail!(
            "--max-error, --eval-cmd, --max-degradation, --optimizer and --no-delta \
             apply to --codec inshrink"
        );
    }
    let choice = CodecChoice {
        kind,
        mantissa_bits: args.mantissa_bits,
        norm_block: args.norm_block,
        clusters: args.clusters,
    };
    if args.chain {
        if args.base.is_some() {
            bail!("--chain takes its bases from the chain: no --base");
        }
        if args.json {
            bail!("--chain does not take --json (`bitlens inspect CHAIN --json`)");
        }
        let options = CompressOptions {
            key_every: args.key,
            measure_full: !args.skip_full_size,
        };
        let steps = std::iter::once(args.input.clone())
            .chain(args.more.iter().cloned())
            .collect();
        return Ok(Run::Chain(steps, choice, options));
    }
    if args.json && kind != CodecKind::Auto {
        bail!("--json applies to --codec auto and --codec inshrink");
    }
    Ok(Run::Snapshot(choice))
}

/// Runs `bitlens compress`.
pub fn run(args: &Args) -> Result<()> {
    match plan(args)? {
        Run::Inshrink(a) => {
            crate::cmd::inshrink::compress(&args.input, &args.output, &a, args.json)
        }
        Run::Chain(steps, choice, options) => {
            crate::cmd::chain::compress(&steps, &args.output, choice, &options)
        }
        Run::Snapshot(choice) => snapshot(
            &args.input,
            &args.output,
            choice,
            args.base.as_deref(),
            args.json,
        ),
    }
}

/// One checkpoint into a snapshot, then the lines on stderr (and `auto`'s report).
fn snapshot(
    input: &Path,
    output: &Path,
    choice: CodecChoice,
    base: Option<&Path>,
    json: bool,
) -> Result<()> {
    let started = Instant::now();
    let c = bitlens_engine::compress(input, output, choice, base, &Terminal::default())?;
    summary("compressed", &c.totals, started);
    lossy_summary(&c.entries);
    if let Some(auto) = &c.auto {
        print_auto(auto, json)?;
    }
    Ok(())
}

/// `auto`'s choices: one JSON document `{files, totals}` on stdout with `json`, else one line on
/// stderr with how many tensors each candidate won and predicted vs achieved bytes.
fn print_auto(report: &AutoReport, json: bool) -> Result<()> {
    if json {
        return print_json(report);
    }
    let mut wins: BTreeMap<&str, usize> = BTreeMap::new();
    for t in report.files.iter().flat_map(|r| &r.tensors) {
        *wins.entry(t.chosen.as_str()).or_default() += 1;
    }
    let wins: Vec<String> = wins.iter().map(|(k, n)| format!("{n} {k}")).collect();
    eprintln!(
        "bitlens: auto chose {} (tensors); predicted {}, achieved {}",
        wins.join(", "),
        format::bytes(report.totals.predicted_bytes),
        format::bytes(report.totals.achieved_bytes)
    );
    Ok(())
}

/// One line on the error of lossily stored tensors.
fn lossy_summary(entries: &[Entry]) {
    let lossy: Vec<_> = entries
        .iter()
        .filter_map(|e| e.error.map(|r| (e, r)))
        .collect();
    if lossy.is_empty() {
        return;
    }
    let values: u64 = lossy.iter().map(|(_, r)| r.values).sum();
    let mse = lossy
        .iter()
        .map(|(_, r)| r.mse * r.values as f64)
        .sum::<f64>()
        / values.max(1) as f64;
    let (worst, r) = lossy
        .iter()
        .max_by(|a, b| a.1.max_rel.total_cmp(&b.1.max_rel))
        .expect("non-empty");
    let mean_rel = lossy
        .iter()
        .map(|(_, r)| r.mean_rel * r.values as f64)
        .sum::<f64>()
        / values.max(1) as f64;
    eprintln!(
        "bitlens: lossy ({}): {} tensors, MSE {mse:.3e}, mean relative error {mean_rel:.3e}, max relative error {:.3e} (tensor `{}`)",
        worst.codec.name(),
        lossy.len(),
        r.max_rel,
        worst.name
    );
}

/// One line on stderr: what went in and out, the ratio and the speed.
pub fn summary(verb: &str, t: &Totals, started: Instant) {
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let (raw, packed) = if verb == "compressed" {
        (t.input, t.output)
    } else {
        (t.output, t.input)
    };
    eprintln!(
        "bitlens: {verb} {} → {} (ratio {:.4}) in {:.2} s, {:.0} MB/s",
        format::bytes(t.input),
        format::bytes(t.output),
        packed as f64 / raw.max(1) as f64,
        secs,
        raw as f64 / secs / 1e6
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::inshrink::ProtectDtype;
    use bitlens_inshrink::ProtectStorage;

    fn args(codec: CodecName) -> Args {
        Args {
            input: "m.safetensors".into(),
            output: "m.bls".into(),
            codec,
            mantissa_bits: None,
            norm_block: 512,
            clusters: 16,
            base: None,
            max_error: None,
            eval_cmd: None,
            max_degradation: None,
            optimizer: None,
            protect_dtype: ProtectDtype::Original,
            no_delta: false,
            json: false,
            chain: false,
            more: Vec::new(),
            key: None,
            skip_full_size: false,
        }
    }

    fn refused(a: &Args) -> String {
        plan(a).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_codec_choice_carries_its_settings() {
        let mut a = args(CodecName::Neuzip);
        a.mantissa_bits = Some(3);
        let Ok(Run::Snapshot(c)) = plan(&a) else {
            panic!("not a snapshot run")
        };
        assert_eq!(
            (c.kind, c.mantissa_bits, c.norm_block),
            (CodecKind::Neuzip, Some(3), 512)
        );
    }

    #[test]
    fn inshrink_options_go_with_inshrink_only() {
        let mut a = args(CodecName::Lmc);
        a.max_error = Some(0.1);
        assert!(refused(&a).contains("apply to --codec inshrink"));
        a.codec = CodecName::Inshrink;
        a.protect_dtype = ProtectDtype::Bf16;
        let Ok(Run::Inshrink(i)) = plan(&a) else {
            panic!("not an inshrink run")
        };
        assert_eq!((i.max_error, i.protect), (Some(0.1), ProtectStorage::Bf16));
        a.chain = true;
        assert!(refused(&a).contains("does not make --chain chains"));
    }

    #[test]
    fn a_chain_takes_its_steps_in_order_and_no_base_or_json() {
        let mut a = args(CodecName::Lmc);
        a.chain = true;
        a.more = vec!["b".into(), "c".into()];
        a.key = Some(2);
        let Ok(Run::Chain(steps, _, o)) = plan(&a) else {
            panic!("not a chain run")
        };
        assert_eq!(
            steps,
            [PathBuf::from("m.safetensors"), "b".into(), "c".into()]
        );
        assert_eq!((o.key_every, o.measure_full), (Some(2), true));
        a.base = Some("x".into());
        assert!(refused(&a).contains("no --base"));
        a.base = None;
        a.json = true;
        assert!(refused(&a).contains("does not take --json"));
    }

    #[test]
    fn json_goes_with_auto_and_inshrink() {
        let mut a = args(CodecName::Lmc);
        a.json = true;
        assert!(refused(&a).contains("--json applies to --codec auto"));
        a.codec = CodecName::Auto;
        assert!(matches!(plan(&a), Ok(Run::Snapshot(_))));
    }
}
