//! `bitlens inspect`: the engine's inspection of checkpoints, snapshots or chains, printed as
//! tables or one JSON document (`bitlens_report`: `InspectReport`, `SnapshotsReport`,
//! `ChainsReport`). A remote file's statistics come from its matching sidecar unless
//! `--no-sidecar` (the engine says which on stderr).

use crate::io::print_json;
use crate::io::progress::Terminal;
use anyhow::Result;
use bitlens_engine::{Inspection, Sidecars};
use bitlens_report::inspect::InspectReport;
use bitlens_stats::format;
use bitlens_stats::Summary;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Runs `inspect` over the inputs and prints the table or JSON to stdout.
pub fn run(inputs: &[PathBuf], json: bool, no_sidecar: bool) -> Result<()> {
    let started = Instant::now();
    let sidecars = if no_sidecar {
        Sidecars::Skip
    } else {
        Sidecars::Use
    };
    match bitlens_engine::inspect_with(inputs, None, sidecars, &Terminal::default())? {
        Inspection::Chains(r) if json => print_json(&r),
        Inspection::Chains(r) => crate::cmd::chain::print_chains(&r),
        Inspection::Snapshots(r) if json => print_json(&r),
        Inspection::Snapshots(r) => crate::cmd::snapshot::print_snapshots(&r),
        Inspection::Checkpoints(report) => {
            let secs = started.elapsed().as_secs_f64();
            if json {
                print_json(&report)?;
            } else {
                print_table(&mut std::io::stdout().lock(), &report)?;
            }
            eprintln!(
                "bitlens: inspected {} in {:.3} s ({:.2} GB/s, {} threads)",
                format::bytes(report.summary.bytes),
                secs,
                report.summary.bytes as f64 / secs.max(1e-9) / 1e9,
                rayon::current_num_threads()
            );
            Ok(())
        }
    }
}

fn print_table(out: &mut impl Write, report: &InspectReport) -> Result<()> {
    const NAME: usize = 44;
    for file in &report.files {
        let kind = file
            .kind
            .as_deref()
            .map_or_else(String::new, |k| format!("{k}, "));
        writeln!(
            out,
            "{}  ({kind}{}, {} tensors, {} params)",
            file.path,
            format::bytes(file.file_size),
            file.tensors.len(),
            format::count(file.summary.params)
        )?;
        writeln!(
            out,
            "  {:<NAME$} {:<7} {:<16} {:>9} {:>9} {:>6} {:<24} {:>5} {:>6}",
            "tensor",
            "dtype",
            "shape",
            "params",
            "bytes",
            "H",
            "H by byte (msb..lsb)",
            "H exp",
            "pred"
        )?;
        for t in &file.tensors {
            // The CLI measures every tensor, so each has its statistics.
            let Some(s) = &t.stats else { continue };
            writeln!(
                out,
                "  {:<NAME$} {:<7} {:<16} {:>9} {:>9} {:>6.3} {:<24} {:>5} {:>6.3}",
                format::name(&t.name, NAME),
                s.element_type
                    .clone()
                    .unwrap_or_else(|| s.dtype.to_string()),
                format::shape(&t.shape),
                format::count(t.params),
                format::bytes(s.bytes),
                s.byte_entropy,
                format::groups(&s.byte_group_entropy),
                s.exponent_entropy
                    .map_or_else(|| "-".to_owned(), |e| format!("{e:.2}")),
                s.predicted_ratio
            )?;
        }
        print_summary(out, "  file", &file.summary)?;
        writeln!(out)?;
    }
    if report.files.len() > 1 {
        print_summary(out, "model", &report.summary)?;
    }
    Ok(())
}

fn print_summary(out: &mut impl Write, label: &str, s: &Summary) -> Result<()> {
    writeln!(
        out,
        "{label}: {} tensors, {} params, {}; byte entropy {:.3} bits/byte; 64 KiB block bound {} (ratio {:.3})",
        s.tensors,
        format::count(s.params),
        format::bytes(s.bytes),
        s.byte_entropy,
        format::bytes(s.predicted_bytes),
        s.predicted_ratio
    )?;
    for d in &s.by_dtype {
        writeln!(
            out,
            "{:>width$}  {:<7} {:>4} tensors {:>9} params {:>9}  H by byte {}  H exp {}  pred {:.3}{}",
            "",
            d.type_name(),
            d.tensors,
            format::count(d.params),
            format::bytes(d.bytes),
            format::groups(&d.byte_group_entropy),
            d.exponent_entropy.map_or_else(|| "-".to_owned(), |e| format!("{e:.2}")),
            if d.bytes == 0 { 1.0 } else { d.predicted_bytes as f64 / d.bytes as f64 },
            match (d.code_entropy, d.code_bits) {
                (Some(h), Some(b)) => format!("  H code {h:.3} of {b} bits"),
                _ => String::new(),
            },
            width = label.len()
        )?;
    }
    Ok(())
}
