//! `bitlens diff`: bit flips and changed elements between two checkpoints of any format, matched
//! by tensor name, element type and shape. Flips are counted on the stored bytes in element order
//! (lanes of the dtype); for a ggml block-quantized tensor on its raw block bytes (`U8` lanes), and
//! its dequantized values are compared too (`dequantized`: changed fraction, largest and mean
//! absolute difference, relative L2 — [`bitlens_stats::DequantDiff`]). Pairs that are not two plain
//! byte ranges (deflated `.npz` members, PyTorch views, ggml blocks) are streamed in lockstep by
//! [`bitlens_stats::entry::entry_diff`], the function the page's workers run for the same pairs.

use crate::analyze::{flip_stats, Side};
use crate::checkpoint::{Model, ModelFile};
use crate::error::{Context, Result};
use crate::progress::Progress;
use bitlens_report::diff::{DiffReport, Mismatch, TensorDiff};
use bitlens_stats::entry::lane_dtype;
use bitlens_stats::FlipSummary;
use bitlens_tensors::format::{bytes, ElementType, Entry};
use rayon::prelude::*;
use std::path::Path;

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

/// `bitlens diff A B`: the tensors of two checkpoints (any format, files, indexes, directories or
/// URLs) matched by name, element type and shape, and their bit flips.
pub fn diff(a_path: &Path, b_path: &Path, progress: &dyn Progress) -> Result<DiffReport> {
    let a = Model::open(a_path)?;
    let b = Model::open(b_path)?;
    a.warn(progress);
    b.warn(progress);
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
    progress.start(total, "diff");
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
            flip_stats(&side_a, &side_b, progress).with_context(|| {
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
        a: a_path.to_string_lossy().into_owned(),
        b: b_path.to_string_lossy().into_owned(),
        tensors,
        mismatched,
        only_in_a,
        only_in_b,
        overall,
    };
    Ok(report)
}
