//! `bitlens diff`: the engine's comparison of two checkpoints (`bitlens_engine::diff`), printed
//! as a table of bit flips per tensor or one JSON document (`bitlens_report::diff::DiffReport`).

use crate::io::print_json;
use crate::io::progress::Terminal;
use anyhow::Result;
use bitlens_report::diff::DiffReport;
use bitlens_stats::format;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Runs `diff A B` and prints the table or JSON to stdout.
pub fn run(a: &Path, b: &Path, json: bool) -> Result<()> {
    let started = Instant::now();
    let report = bitlens_engine::diff(a, b, &Terminal::default())?;
    let secs = started.elapsed().as_secs_f64();
    if json {
        print_json(&report)?;
    } else {
        print_table(&mut std::io::stdout().lock(), &report)?;
    }
    // Both sides of every compared tensor were read.
    let total = 2 * report.overall.bytes;
    eprintln!(
        "bitlens: compared {} in {:.3} s ({:.2} GB/s read)",
        format::bytes(total),
        secs,
        total as f64 / secs.max(1e-9) / 1e9
    );
    Ok(())
}

/// Flip ratios, most significant bit first, as a compact row of percentages.
fn flip_row(r: &[f64]) -> String {
    let parts: Vec<String> = r
        .iter()
        .rev()
        .map(|x| format!("{:.0}", 100.0 * x))
        .collect();
    parts.join(" ")
}

fn print_table(out: &mut impl Write, r: &DiffReport) -> Result<()> {
    const NAME: usize = 44;
    writeln!(out, "A: {}\nB: {}", r.a, r.b)?;
    writeln!(
        out,
        "  {:<NAME$} {:<7} {:>9} {:>8}  bit flip % (msb..lsb)",
        "tensor", "dtype", "elements", "changed"
    )?;
    for t in &r.tensors {
        writeln!(
            out,
            "  {:<NAME$} {:<7} {:>9} {:>7.3}%  {}",
            format::name(&t.name, NAME),
            t.element_type
                .clone()
                .unwrap_or_else(|| t.dtype.to_string()),
            format::count(t.lanes),
            100.0 * t.changed_fraction,
            flip_row(&t.bit_flip_ratio)
        )?;
        if let Some(v) = &t.dequantized {
            writeln!(
                out,
                "  {:<NAME$} dequantized: {} of {} values changed ({:.3}%), max |Δ| {:.4e}, mean |Δ| {:.4e}, relative L2 {}",
                "",
                format::count(v.changed),
                format::count(v.values),
                100.0 * v.changed_fraction,
                v.max_abs_diff,
                v.mean_abs_diff,
                v.relative_l2
                    .map_or_else(|| "n/a (A is zero)".to_owned(), |r| format!("{r:.4e}"))
            )?;
        }
    }
    for m in &r.mismatched {
        writeln!(
            out,
            "  mismatch: `{}` is {} {} in A but {} {} in B",
            m.name,
            m.a.0,
            format::shape(&m.a.1),
            m.b.0,
            format::shape(&m.b.1)
        )?;
    }
    for n in &r.only_in_a {
        writeln!(out, "  only in A: `{n}`")?;
    }
    for n in &r.only_in_b {
        writeln!(out, "  only in B: `{n}`")?;
    }
    let o = &r.overall;
    writeln!(
        out,
        "overall: {} tensors compared, {} of {} elements changed ({:.3}%); XOR delta bound {} of {}",
        o.tensors,
        format::count(o.changed_lanes),
        format::count(o.lanes),
        100.0 * o.changed_fraction,
        format::bytes(o.delta_predicted_bytes),
        format::bytes(o.bytes)
    )?;
    for d in &o.by_dtype {
        writeln!(
            out,
            "  {:<7} changed {:>7.3}%  bit flip % (msb..lsb) {}",
            d.dtype.to_string(),
            100.0 * d.changed_fraction,
            flip_row(&d.bit_flip_ratio)
        )?;
    }
    Ok(())
}
