//! `bitlens compress`: its arguments, checked and sorted into one of three runs by the engine
//! (`bitlens_engine::plan`: a snapshot of a checkpoint, any codec of the container; a chain; an
//! Inshrinkerator search), and the lines it prints: sizes and speed, the lossy tensors' error,
//! `auto`'s choices, a chain's totals ([`crate::cmd::chain`]), the search's report
//! ([`crate::cmd::inshrink`]).

use crate::io::print_json;
use crate::io::progress::Terminal;
use anyhow::Result;
use bitlens_engine::plan::{CompressArgs, CompressCodec, Outcome};
use bitlens_engine::{Compressed, Totals};
use bitlens_report::auto::AutoReport;
use bitlens_snapshot::{CodecKind, Entry};
use bitlens_stats::format;
use std::collections::BTreeMap;
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

impl From<CodecName> for CompressCodec {
    fn from(name: CodecName) -> CompressCodec {
        name.kind()
            .map_or(CompressCodec::Inshrink, CompressCodec::Container)
    }
}

/// Runs `bitlens compress` (its options checked by `bitlens_engine::plan`), then prints what the
/// run wrote.
pub fn run(args: &CompressArgs) -> Result<()> {
    let started = Instant::now();
    match bitlens_engine::plan::execute(args, &Terminal::default())? {
        Outcome::Inshrink(report) => crate::cmd::inshrink::print(&report, args.json),
        Outcome::Chain(report) => {
            crate::cmd::chain::print_compressed(&report);
            Ok(())
        }
        Outcome::Snapshot(c) => snapshot(&c, started, args.json),
    }
}

/// The lines on stderr of a snapshot written (and `auto`'s report).
fn snapshot(c: &Compressed, started: Instant, json: bool) -> Result<()> {
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
