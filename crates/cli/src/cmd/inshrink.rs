//! `bitlens compress --codec inshrink` (Inshrinkerator, paper 002): what the engine's search
//! (`bitlens_engine::inshrink`) prints — a few lines on stderr, or the
//! `bitlens_report::inshrink::CompressReport` JSON document on stdout.

use crate::io::print_json;
use anyhow::Result;
use bitlens_inshrink::ProtectStorage;
use bitlens_report::inshrink::CompressReport;

/// How protected values are stored (`--protect-dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtectDtype {
    /// In the tensor's own dtype: bit-exact.
    Original,
    /// In bf16, as the paper does (exact for bf16 tensors).
    Bf16,
}

impl ProtectDtype {
    /// The core's storage.
    pub fn storage(self) -> ProtectStorage {
        match self {
            ProtectDtype::Original => ProtectStorage::Original,
            ProtectDtype::Bf16 => ProtectStorage::Bf16,
        }
    }
}

/// Prints the search's report: the JSON document on stdout with `json`, else a few lines on
/// stderr.
pub fn print(report: &CompressReport, json: bool) -> Result<()> {
    if json {
        return print_json(report);
    }
    print_report(report);
    Ok(())
}

/// The compress report as a few lines on stderr.
fn print_report(report: &CompressReport) {
    let s = &report.search;
    eprintln!(
        "bitlens: inshrink, quality: {} — {} evaluations",
        s.quality.name, s.quality.evaluations
    );
    for g in &s.groups {
        eprintln!(
            "  group {:<9} {} ({}, {} trials, largest tensor error {:.4})",
            g.group, g.setting, g.mode, g.trials, g.max_error
        );
    }
    if !s.own_settings.is_empty() {
        let lossless = s.own_settings.iter().filter(|o| o.setting.exact).count();
        eprintln!(
            "  {} tensors on their own setting: {} with more bins, {} stored lossless (LMC); \
             `bitlens inspect` lists them and why",
            s.own_settings.len(),
            s.own_settings.len() - lossless,
            lossless
        );
    }
    if report.lossless_file {
        eprintln!(
            "  the lossy snapshot was not smaller than the lossless one: wrote the plain LMC \
             snapshot (lossless, no plan)"
        );
    }
    if let Some(b) = s.base.as_ref().filter(|b| b.delta_tensors > 0) {
        eprintln!("  delta against {} ({} tensors)", b.name, b.delta_tensors);
    }
    let t = s.times.as_ref();
    let secs =
        |f: fn(&bitlens_report::inshrink::SearchTimes) -> Option<f64>| t.and_then(f).unwrap_or(0.0);
    eprintln!(
        "bitlens: {} → {} bytes (ratio {:.4}); search {:.2} s, encode {:.2} s, total {:.2} s",
        report.input_bytes,
        report.output_bytes,
        report.ratio,
        secs(|t| Some(t.search_seconds)),
        secs(|t| t.encode_seconds),
        secs(|t| t.total_seconds)
    );
}
