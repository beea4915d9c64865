//! What `bitlens compress --chain` prints of a chain (the engine's `bitlens_engine::chain`, LMC
//! §3.1's incremental snapshots) and the table `inspect` prints of one (`bitlens_report::chain`).

use anyhow::Result;
use bitlens_report::chain::{ChainReport, ChainsReport};
use bitlens_stats::format;
use std::io::Write;

/// After `bitlens compress --chain`: one line of totals on stderr.
pub fn print_compressed(report: &ChainReport) {
    let t = &report.totals;
    eprintln!(
        "bitlens: chain of {} steps: {} raw → {} ({:.4}){}",
        report.steps.len(),
        format::bytes(t.original_size),
        format::bytes(t.chain_size),
        t.ratio,
        t.all_full_size.map_or(String::new(), |f| format!(
            "; all steps in full {} ({:.4})",
            format::bytes(f),
            f as f64 / t.original_size.max(1) as f64
        ))
    );
}

/// Prints the chains' tables on stdout.
pub fn print_chains(report: &ChainsReport) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for r in &report.chains {
        print_chain(&mut out, r)?;
    }
    Ok(())
}

fn print_chain(out: &mut impl Write, r: &ChainReport) -> Result<()> {
    let files: usize = r.steps.iter().map(|s| s.files.len()).sum();
    writeln!(
        out,
        "{}  (chain of {} steps, {files} snapshots, codec {}, keys: {}; every snapshot checked against the manifest and its base)",
        r.path,
        r.steps.len(),
        r.codec,
        r.key_every
            .map_or("the first step".to_owned(), |n| format!("every {n} steps"))
    )?;
    writeln!(
        out,
        "  {:<16} {:<28} {:<6} {:>9} {:>9} {:>7} {:>9} {:>8}",
        "step", "file", "kind", "original", "stored", "ratio", "in full", "Δ/full"
    )?;
    for s in &r.steps {
        for f in &s.files {
            writeln!(
                out,
                "  {:<16} {:<28} {:<6} {:>9} {:>9} {:>7.4} {:>9} {:>8}",
                format::name(&s.name, 16),
                format::name(&f.name, 28),
                f.kind.to_string(),
                format::bytes(f.original_size),
                format::bytes(f.snapshot_size),
                f.ratio,
                f.full_size.map_or("-".to_owned(), format::bytes),
                f.delta_vs_full
                    .map_or("-".to_owned(), |d| format!("{d:.4}"))
            )?;
        }
    }
    let t = &r.totals;
    writeln!(
        out,
        "  total: {} raw → chain {} (ratio {:.4}){}",
        format::bytes(t.original_size),
        format::bytes(t.chain_size),
        t.ratio,
        match (t.all_full_size, t.saved_bytes) {
            (Some(full), Some(saved)) => format!(
                "; every step in full {} (ratio {:.4}): the deltas save {} ({:.1} %)",
                format::bytes(full),
                full as f64 / t.original_size.max(1) as f64,
                format::bytes(saved.unsigned_abs()),
                100.0 * saved as f64 / full.max(1) as f64
            ),
            _ => "; the deltas' sizes in full were not measured (--skip-full-size)".to_owned(),
        }
    )?;
    if r.trend.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  delta ratio (stored / original) by step — falls as training converges (LMC Fig. 12):"
    )?;
    write!(out, "  {:<16}", "step")?;
    for t in &r.trend {
        write!(out, " {:>26}", format::name(&t.file, 26))?;
    }
    writeln!(out)?;
    for s in &r.steps {
        let cells: Vec<Option<f64>> = r
            .trend
            .iter()
            .map(|t| t.points.iter().find(|p| p.0 == s.name).map(|p| p.1))
            .collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        write!(out, "  {:<16}", format::name(&s.name, 16))?;
        for c in cells {
            write!(
                out,
                " {:>26}",
                c.map_or("-".to_owned(), |v| format!("{v:.4}"))
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}
