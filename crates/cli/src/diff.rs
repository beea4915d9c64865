//! `bitlens diff`: bit flips and changed elements between two checkpoints of any format, matched
//! by tensor name, element type and shape. Flips are counted on the stored bytes in element order
//! (lanes of the dtype); for a ggml block-quantized tensor on its raw block bytes (`U8` lanes), and
//! its dequantized values are compared too (`dequantized`: changed fraction, largest and mean
//! absolute difference, relative L2 — [`bitlens_stats::DequantDiff`]). Pairs that are not two plain
//! byte ranges (deflated `.npz` members, PyTorch views, ggml blocks) are streamed in lockstep by
//! [`bitlens_stats::entry::entry_diff`], the function the page's workers run for the same pairs.

use crate::analyze::{flip_stats, Side};
use crate::progress::Progress;
use crate::source::{Model, ModelFile};
use anyhow::{Context, Result};
use bitlens_stats::entry::lane_dtype;
use bitlens_stats::format;
use bitlens_stats::{DequantDiff, FlipSummary};
use bitlens_tensors::format::{bytes, ElementType, Entry};
use bitlens_tensors::Dtype;
use rayon::prelude::*;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One compared tensor.
#[derive(Serialize)]
pub struct TensorDiff {
    /// Tensor name.
    pub name: String,
    /// Lane type of both sides (`U8` for a ggml block type: its raw bytes).
    pub dtype: Dtype,
    /// The ggml block type of both sides (`Q4_K`…), when quantized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
    /// Shape of both sides.
    pub shape: Vec<u64>,
    /// Lanes compared (elements; 2 per C64 element; bytes for packed types).
    pub lanes: u64,
    /// Lanes that changed.
    pub changed_lanes: u64,
    /// `changed_lanes / lanes`.
    pub changed_fraction: f64,
    /// Flipped bits per position, bit 0 = least significant.
    pub bit_flip_counts: Vec<u64>,
    /// `bit_flip_counts / lanes` (LMC Fig. 6).
    pub bit_flip_ratio: Vec<f64>,
    /// Order-0 entropy of each byte group of the XOR delta, bits per byte.
    pub delta_byte_group_entropy: Vec<f64>,
    /// The 64 KiB block-entropy bound of the XOR delta, in bytes.
    pub delta_predicted_bytes: u64,
    /// How the dequantized values changed (ggml block types that dequantize).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dequantized: Option<DequantDiff>,
}

/// A tensor present on both sides with different dtype or shape.
#[derive(Serialize)]
pub struct Mismatch {
    /// Tensor name.
    pub name: String,
    /// `(element type, shape)` in A.
    pub a: (String, Vec<u64>),
    /// `(element type, shape)` in B.
    pub b: (String, Vec<u64>),
}

/// The whole `diff --json` document.
#[derive(Serialize)]
pub struct DiffReport {
    /// Checkpoint A as given.
    pub a: PathBuf,
    /// Checkpoint B as given.
    pub b: PathBuf,
    /// Compared tensors, in A's order.
    pub tensors: Vec<TensorDiff>,
    /// Same name, different dtype or shape (not compared).
    pub mismatched: Vec<Mismatch>,
    /// Names only in A.
    pub only_in_a: Vec<String>,
    /// Names only in B.
    pub only_in_b: Vec<String>,
    /// Totals over the compared tensors.
    pub overall: FlipSummary,
}

/// Every tensor of a checkpoint with its file: files in order, each file's tensors in layout order.
fn tensors(c: &Model) -> Vec<(&ModelFile, &Entry)> {
    c.files
        .iter()
        .flat_map(|s| s.layout.entries.iter().map(move |t| (s, t)))
        .collect()
}

/// An element type's name: the dtype's, or the ggml type's (`Q4_K`).
fn type_name(ty: ElementType) -> String {
    match ty {
        ElementType::Dtype(d) => d.to_string(),
        ElementType::Ggml(g) => g
            .name()
            .map_or_else(|| format!("ggml type {}", g.0), str::to_owned),
    }
}

/// Runs `diff A B` and prints the table or JSON to stdout.
pub fn run(a_path: &Path, b_path: &Path, json: bool) -> Result<()> {
    let a = Model::open(a_path)?;
    let b = Model::open(b_path)?;
    let (a_tensors, b_tensors) = (tensors(&a), tensors(&b));
    let pairing = bitlens_tensors::pair(
        a_tensors.iter().map(|&(_, t)| t.into()),
        b_tensors.iter().map(|&(_, t)| t.into()),
    );
    let pairs: Vec<_> = pairing
        .matched
        .iter()
        .map(|&(ia, ib)| {
            let ((sa, ta), (sb, tb)) = (a_tensors[ia], b_tensors[ib]);
            (sa, ta, sb, tb)
        })
        .collect();
    let mismatched = pairing
        .mismatched
        .iter()
        .map(|&(ia, ib)| {
            let (ta, tb) = (a_tensors[ia].1, b_tensors[ib].1);
            Mismatch {
                name: ta.name.clone(),
                a: (type_name(ta.ty), ta.shape.clone()),
                b: (type_name(tb.ty), tb.shape.clone()),
            }
        })
        .collect();
    let name_of = |side: &[(&ModelFile, &Entry)], i: usize| side[i].1.name.clone();
    let only_in_a = pairing
        .only_in_a
        .iter()
        .map(|&i| name_of(&a_tensors, i))
        .collect();
    let only_in_b = pairing
        .only_in_b
        .iter()
        .map(|&i| name_of(&b_tensors, i))
        .collect();
    let total: u64 = pairs.iter().map(|p| 2 * bytes::byte_len(p.1)).sum();
    let progress = Progress::new(total, "diff");
    let started = Instant::now();
    let flips = pairs
        .par_iter()
        .map(|&(sa, ta, sb, tb)| {
            let side_a = Side {
                src: &sa.source,
                tensor: ta,
            };
            let side_b = Side {
                src: &sb.source,
                tensor: tb,
            };
            flip_stats(&side_a, &side_b, &progress).with_context(|| {
                format!(
                    "{} vs {}: tensor `{}`",
                    sa.path.display(),
                    sb.path.display(),
                    ta.name
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    progress.finish();
    let secs = started.elapsed().as_secs_f64();
    let mut overall = FlipSummary::default();
    let tensors: Vec<TensorDiff> = pairs
        .iter()
        .zip(flips)
        .map(|(&(_, ta, _, _), d)| {
            let f = d.flips;
            overall.add(&f);
            TensorDiff {
                name: ta.name.clone(),
                dtype: lane_dtype(ta.ty),
                element_type: match ta.ty {
                    ElementType::Ggml(_) => Some(type_name(ta.ty)),
                    ElementType::Dtype(_) => None,
                },
                shape: ta.shape.clone(),
                lanes: f.lanes,
                changed_lanes: f.changed_lanes,
                changed_fraction: f.changed_fraction,
                bit_flip_counts: f.bit_flip_counts,
                bit_flip_ratio: f.bit_flip_ratio,
                delta_byte_group_entropy: f.delta.byte_group_entropy,
                delta_predicted_bytes: f.delta.predicted_bytes,
                dequantized: d.dequantized,
            }
        })
        .collect();
    let report = DiffReport {
        a: a_path.to_path_buf(),
        b: b_path.to_path_buf(),
        tensors,
        mismatched,
        only_in_a,
        only_in_b,
        overall,
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &report)?;
    }
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
    writeln!(out, "A: {}\nB: {}", r.a.display(), r.b.display())?;
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
