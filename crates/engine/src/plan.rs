//! What a `bitlens compress` request asks for, its options checked once for every caller (the
//! CLI's command line, the Python package's `compress_file`): one of three runs — a snapshot of a
//! checkpoint (the container of LMC §4 with any codec of the papers), a chain (LMC §3.1's
//! incremental snapshots) or an Inshrinkerator search (paper 002) — and [`execute`], which
//! carries it out.

use crate::bail;
use crate::chain::CompressOptions;
use crate::compress::Compressed;
use crate::error::{Error, Result};
use crate::inshrink::Args as InshrinkArgs;
use crate::progress::Progress;
use bitlens_inshrink::ProtectStorage;
use bitlens_report::chain::ChainReport;
use bitlens_report::inshrink::CompressReport;
use bitlens_snapshot::{CodecChoice, CodecKind};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A codec `compress` takes: a codec of the container, or Inshrinkerator (a search of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressCodec {
    /// A codec family of the container ([`CodecKind`]).
    Container(CodecKind),
    /// Inshrinkerator (paper 002).
    Inshrink,
}

impl CompressCodec {
    /// The name the CLI's `--codec` and the Python package's `codec=` take.
    pub fn name(self) -> &'static str {
        match self {
            CompressCodec::Container(kind) => kind.name(),
            CompressCodec::Inshrink => "inshrink",
        }
    }
}

impl fmt::Display for CompressCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CompressCodec {
    type Err = Error;

    /// A codec by name: one of [`CodecKind::ALL`]'s, or `inshrink`.
    fn from_str(s: &str) -> Result<Self> {
        if s == CompressCodec::Inshrink.name() {
            return Ok(CompressCodec::Inshrink);
        }
        s.parse().map(CompressCodec::Container).map_err(|_| {
            let names: Vec<&str> = CodecKind::ALL
                .iter()
                .map(|k| k.name())
                .chain([CompressCodec::Inshrink.name()])
                .collect();
            Error::invalid(format!("unknown codec `{s}` ({})", names.join(", ")))
        })
    }
}

/// How protected values are stored, by the name the reports give it (`original`, `bf16`).
pub fn protect_storage(name: &str) -> Result<ProtectStorage> {
    [ProtectStorage::Original, ProtectStorage::Bf16]
        .into_iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| {
            Error::invalid(format!(
                "unknown protected-value storage `{name}` (original, bf16)"
            ))
        })
}

/// Everything a `compress` request gives (the CLI's options, the Python package's arguments).
#[derive(Debug, Clone)]
pub struct CompressArgs {
    /// The checkpoint (or the first step of a chain).
    pub input: PathBuf,
    /// The snapshot, directory of snapshots, or chain directory to write.
    pub output: PathBuf,
    /// The codec.
    pub codec: CompressCodec,
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
    pub protect: ProtectStorage,
    /// Inshrink with a base: full streams.
    pub no_delta: bool,
    /// Print the JSON report (auto, inshrink): a CLI option, checked here with the others.
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

impl CompressArgs {
    /// `input` into `output` with the CLI's defaults: LMC, lossless NeuZip settings (block 512),
    /// 16 BitSnap clusters, protected values in their own dtype, no base, no chain.
    pub fn new(input: impl Into<PathBuf>, output: impl Into<PathBuf>) -> CompressArgs {
        let defaults = CodecChoice::new(CodecKind::Lmc);
        CompressArgs {
            input: input.into(),
            output: output.into(),
            codec: CompressCodec::Container(CodecKind::Lmc),
            mantissa_bits: defaults.mantissa_bits,
            norm_block: defaults.norm_block,
            clusters: defaults.clusters,
            base: None,
            max_error: None,
            eval_cmd: None,
            max_degradation: None,
            optimizer: None,
            protect: ProtectStorage::Original,
            no_delta: false,
            json: false,
            chain: false,
            more: Vec::new(),
            key: None,
            skip_full_size: false,
        }
    }
}

/// What a `compress` request asks for, once its options are checked.
#[derive(Debug, Clone)]
pub enum Run {
    /// An Inshrinkerator search (paper 002).
    Inshrink(InshrinkArgs),
    /// A chain of checkpoints: the steps in order.
    Chain(Vec<PathBuf>, CodecChoice, CompressOptions),
    /// One checkpoint into a snapshot.
    Snapshot(CodecChoice),
}

/// Checks which options go together and sorts the request into its [`Run`].
pub fn plan(args: &CompressArgs) -> Result<Run> {
    let CompressCodec::Container(kind) = args.codec else {
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
            protect: args.protect,
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

/// What a `compress` run wrote, by kind of run.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A snapshot (or a directory of shard snapshots): sizes, every entry, `auto`'s choices.
    Snapshot(Compressed),
    /// A chain directory: the report `inspect` gives of it.
    Chain(ChainReport),
    /// An Inshrinkerator snapshot: the search's report.
    Inshrink(Box<CompressReport>),
}

/// Checks `args` ([`plan`]) and carries the run out: [`crate::compress()`],
/// [`crate::chain::compress`] or [`crate::inshrink::compress`].
pub fn execute(args: &CompressArgs, progress: &dyn Progress) -> Result<Outcome> {
    Ok(match plan(args)? {
        Run::Inshrink(a) => Outcome::Inshrink(Box::new(crate::inshrink::compress(
            &args.input,
            &args.output,
            &a,
        )?)),
        Run::Chain(steps, choice, options) => Outcome::Chain(crate::chain::compress(
            &steps,
            &args.output,
            choice,
            &options,
            progress,
        )?),
        Run::Snapshot(choice) => Outcome::Snapshot(crate::compress(
            &args.input,
            &args.output,
            choice,
            args.base.as_deref(),
            progress,
        )?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(codec: CompressCodec) -> CompressArgs {
        CompressArgs {
            codec,
            ..CompressArgs::new("m.safetensors", "m.bls")
        }
    }

    fn refused(a: &CompressArgs) -> String {
        plan(a).err().map(|e| e.to_string()).unwrap_or_default()
    }

    const LMC: CompressCodec = CompressCodec::Container(CodecKind::Lmc);

    #[test]
    fn codecs_are_named_as_the_cli_names_them() {
        for name in [
            "lmc",
            "neuzip",
            "bitsnap",
            "bitsnap-quant",
            "stored",
            "auto",
            "inshrink",
        ] {
            let codec: CompressCodec = name.parse().unwrap();
            assert_eq!(codec.name(), name);
        }
        let e = "zip".parse::<CompressCodec>().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        assert!(
            e.to_string().starts_with("unknown codec `zip` (lmc, "),
            "{e}"
        );
    }

    #[test]
    fn protected_values_are_stored_by_name() {
        assert_eq!(protect_storage("bf16").unwrap(), ProtectStorage::Bf16);
        assert_eq!(
            protect_storage("original").unwrap(),
            ProtectStorage::Original
        );
        assert!(protect_storage("f8").is_err());
    }

    #[test]
    fn a_codec_choice_carries_its_settings() {
        let mut a = args(CompressCodec::Container(CodecKind::Neuzip));
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
        let mut a = args(LMC);
        a.max_error = Some(0.1);
        assert!(refused(&a).contains("apply to --codec inshrink"));
        a.codec = CompressCodec::Inshrink;
        a.protect = ProtectStorage::Bf16;
        let Ok(Run::Inshrink(i)) = plan(&a) else {
            panic!("not an inshrink run")
        };
        assert_eq!((i.max_error, i.protect), (Some(0.1), ProtectStorage::Bf16));
        a.chain = true;
        assert!(refused(&a).contains("does not make --chain chains"));
    }

    #[test]
    fn a_chain_takes_its_steps_in_order_and_no_base_or_json() {
        let mut a = args(LMC);
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
        let mut a = args(LMC);
        a.json = true;
        assert!(refused(&a).contains("--json applies to --codec auto"));
        a.codec = CompressCodec::Container(CodecKind::Auto);
        assert!(matches!(plan(&a), Ok(Run::Snapshot(_))));
    }
}
