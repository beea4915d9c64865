//! The table `bitlens inspect` prints of `.bls` snapshots (`bitlens_report::snapshot`): per
//! snapshot its sizes and flags, per tensor its codec, sizes and error; an Inshrinkerator
//! snapshot's plan per group.

use anyhow::Result;
use bitlens_report::inshrink::InshrinkInfo;
use bitlens_report::snapshot::SnapshotsReport;
use bitlens_snapshot::layout::PieceKind;
use bitlens_stats::format;
use std::collections::BTreeMap;
use std::io::Write;

/// Prints the snapshots' tables on stdout.
pub fn print_snapshots(report: &SnapshotsReport) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for s in &report.snapshots {
        writeln!(
            out,
            "{}  (snapshot {} of a {} {} file, ratio {:.4}{}{})",
            s.path,
            format::bytes(s.snapshot_size),
            format::bytes(s.original_size),
            s.original_format.as_deref().unwrap_or("safetensors"),
            s.ratio,
            if s.lossy { ", LOSSY" } else { "" },
            if s.delta {
                ", delta: needs its base"
            } else {
                ""
            }
        )?;
        if let Some(info) = &s.inshrink {
            print_inshrink(&mut out, info)?;
        }
        // Several codecs (a `--codec auto` snapshot): how many tensors and bytes each one holds.
        let mut codecs: BTreeMap<String, (usize, u64)> = BTreeMap::new();
        for t in &s.tensors {
            let c = codecs
                .entry(format!("{}{}", t.codec, if t.delta { " Δ" } else { "" }))
                .or_default();
            c.0 += 1;
            c.1 += t.stored_bytes;
        }
        if codecs.len() > 1 {
            let parts: Vec<String> = codecs
                .iter()
                .map(|(k, (n, b))| format!("{k} {n} ({})", format::bytes(*b)))
                .collect();
            writeln!(out, "  codecs (tensors, stored): {}", parts.join(", "))?;
        }
        if s.original_format.is_some() {
            writeln!(
                out,
                "  the file's bytes in order: tensor data, and the bytes between (gaps) kept verbatim"
            )?;
            if s.tensors
                .iter()
                .any(|t| matches!(&t.piece, Some((k, _)) if k == PieceKind::Deflated.name()))
            {
                writeln!(
                    out,
                    "  deflated: a deflated .npz member's compressed bytes, stored as they are (re-deflating cannot reproduce them byte for byte)"
                )?;
            }
        }
        writeln!(
            out,
            "  {:<44} {:<7} {:<14} {:>9} {:>9} {:>7}  error",
            "tensor", "dtype", "codec", "bytes", "stored", "ratio"
        )?;
        for t in &s.tensors {
            let dtype = match &t.piece {
                Some((kind, ty)) if ty.is_empty() => kind.clone(),
                Some((_, ty)) => ty.clone(),
                None => t.dtype.to_string(),
            };
            let mut error = t.error.as_ref().map_or(String::new(), |e| {
                format!("MSE {:.2e}, max rel {:.2e}", e.mse, e.max_rel)
            });
            if let Some(i) = &t.inshrink {
                error = format!(
                    "rel L2 {:.4}, {}, {} protected; {error}",
                    i.error, i.setting, i.protected
                );
            }
            writeln!(
                out,
                "  {:<44} {:<7} {:<14} {:>9} {:>9} {:>7.4}  {}",
                format::name(&t.name, 44),
                dtype,
                format!("{}{}", t.codec, if t.delta { " Δ" } else { "" }),
                format::bytes(t.bytes),
                format::bytes(t.stored_bytes),
                t.ratio,
                error
            )?;
        }
    }
    Ok(())
}

/// The plan and quality measure of an inshrink snapshot, as `inspect` prints them.
fn print_inshrink(out: &mut impl Write, info: &InshrinkInfo) -> Result<()> {
    writeln!(
        out,
        "  inshrink: quality {}",
        info.quality
            .as_ref()
            .map_or("(not recorded)", |q| q.name.as_str())
    )?;
    for g in &info.groups {
        let search = g.search.as_ref();
        writeln!(
            out,
            "  group {:<9} {}{}, largest tensor error {:.4}{}",
            g.group,
            g.setting,
            if search.is_some_and(|s| s.exact_fallback) {
                " (nothing on the grid passed for the whole group: exact fallback, stored \
                 lossless unless a tensor has its own setting below)"
            } else {
                ""
            },
            g.max_error,
            match search {
                Some(s) => format!(", {} search, {} trials", s.mode, s.trials),
                None => String::new(),
            }
        )?;
    }
    let own = info
        .report
        .as_ref()
        .map_or(&[][..], |r| &r.own_settings[..]);
    if !own.is_empty() {
        writeln!(out, "  {} tensors not at their group's setting:", own.len())?;
        for o in own {
            writeln!(
                out,
                "    {:<44} {} (rel L2 {:.4}): {}",
                format::name(&o.name, 44),
                o.setting,
                o.error,
                o.reason
            )?;
        }
    }
    if let Some(b) = &info.base {
        writeln!(
            out,
            "  delta against {} (index checksum {})",
            b.name, b.index_checksum
        )?;
    }
    Ok(())
}
