//! Inshrinkerator (paper 002) in the codec worker: [`compress_inshrink`] searches a safetensors
//! file's plan under the model-free proxy — every tensor's relative L2 error `‖w − ŵ‖ / ‖w‖` at most
//! the budget (§5's search with the CLI's `--max-error`) — and writes the version 4 snapshot
//! `bitlens compress CKPT --codec inshrink --max-error E` writes (`bitlens_snapshot::inshrink`),
//! with the plan and achieved errors as `bitlens inspect --json` reads them back
//! ([`InshrinkInfo`]).
//!
//! The search needs every float tensor's values at once (its sketches and trials span the
//! checkpoint), so they are read whole, as f32, into wasm memory; the snapshot is then written
//! from the file again, frame by frame, in chunks. Chains (`--base PREV.bls`), the user's
//! evaluation (`--eval-cmd`) and optimizer state (`--optimizer`) are the CLI's.
//!
//! As in the CLI, a tensor that misses the budget at its group's setting gets more bins on its
//! own (up to 253) or is stored lossless, and no tensor is stored larger than by LMC: the
//! report's `own_settings` lists them with the reason, which the page shows.

use crate::convert::now;
use crate::error::Failure;
use crate::sink::ChunkSink;
use crate::snapshot::{finished, is_safetensors, OnChunk};
use crate::source::JsSource;
use bitlens_inshrink::report::{l2_proxy_quality, record_lossless, search_report};
use bitlens_inshrink::search::Options;
use bitlens_inshrink::{
    search, values, L2Budget, Meta, Prepared, ProtectStorage, Setting, TensorInput,
};
use bitlens_protocol::inshrink::InshrinkOptions;
use bitlens_protocol::{CompressOptions, Compressed};
use bitlens_report::inshrink::SearchTimes;
use bitlens_snapshot::inshrink::{self as ins, Annex, StreamSummary, TensorCode};
use bitlens_tensors::{Dtype, ReadAt};

/// Compresses the safetensors file `src` with Inshrinkerator under `budget`, writing the snapshot
/// to `on_chunk`; `on_progress(bytes read)` follows the reading of the values (the search itself
/// reports nothing until it is done). Float tensors (f32, f16, bf16) are searched and quantized;
/// the others are stored with LMC, losslessly.
pub fn compress_inshrink(
    src: &JsSource,
    base: Option<&JsSource>,
    options: &CompressOptions,
    budget: InshrinkOptions,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<Compressed, Failure> {
    if base.is_some() {
        return Err(Failure::new(
            "Inshrinkerator chains continue from the previous .bls snapshot, which the CLI takes: \
             bitlens compress CKPT --codec inshrink --max-error E --base PREV.bls",
        ));
    }
    if !options.overrides.is_empty() {
        return Err(Failure::new(
            "Inshrinkerator searches one plan for the whole checkpoint: clear the per-tensor codec choices",
        ));
    }
    if !(budget.max_error.is_finite() && budget.max_error >= 0.0) {
        return Err(Failure(format!(
            "error budget {} is not a number ≥ 0",
            budget.max_error
        )));
    }
    if !is_safetensors(src)? {
        return Err(Failure::new(
            "Inshrinkerator compresses safetensors checkpoints; this file is of another format",
        ));
    }
    let t0 = now();
    let header = src.header()?;
    let mut searched = Vec::new();
    let mut vals: Vec<Vec<f32>> = Vec::new();
    let mut raw = Vec::new();
    for (i, t) in header.tensors.iter().enumerate() {
        if !matches!(t.dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16) {
            continue;
        }
        let (a, b) = header.file_range(t);
        raw.resize((b - a) as usize, 0);
        src.read_exact_at(a, &mut raw)?;
        vals.push(values::to_f32(&raw, t.dtype).map_err(|e| Failure(format!("{}: {e}", t.name)))?);
        searched.push(i);
        on_progress(b);
    }
    drop(raw);
    let t1 = now();
    let inputs: Vec<TensorInput> = searched
        .iter()
        .zip(&vals)
        .map(|(&i, v)| TensorInput {
            name: &header.tensors[i].name,
            dtype: header.tensors[i].dtype,
            values: v,
            second_moment: None,
        })
        .collect();
    let storage = ProtectStorage::Original;
    let prep = Prepared::new(
        inputs,
        Options {
            storage,
            ..Options::default()
        },
    )
    .map_err(|e| Failure(format!("sketching the importances: {e}")))?;
    let t2 = now();
    let mut quality = L2Budget {
        max_error: budget.max_error,
    };
    let outcome = search(&prep, &mut quality, None).map_err(|e| Failure(e.0))?;
    let t3 = now();
    let mut codes: Vec<Option<TensorCode>> = (0..header.tensors.len()).map(|_| None).collect();
    for (k, &i) in searched.iter().enumerate() {
        codes[i] = Some(TensorCode {
            quantized: &outcome.quantized[k],
            base: None,
            meta: Meta {
                layer: prep.kind(k),
                error: outcome.report.tensors[k].error as f32,
            },
        });
    }
    // As the CLI: exact tensors and lossy codes not smaller than LMC's are stored by LMC.
    let dropped = ins::drop_larger(src, &header, &mut codes)?;
    // What the stream headers will say (`bitlens_snapshot::inshrink::stream_summary`): only
    // tensors still written as streams.
    let summaries = codes
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let c = c
                .as_ref()
                .filter(|c| c.quantized.setting != Setting::Exact)?;
            Some((
                header.tensors[i].name.clone(),
                StreamSummary {
                    layer: c.meta.layer,
                    setting: c.quantized.setting,
                    error: c.meta.error,
                    protected: c.quantized.protected.len() as u64,
                    bins: c.quantized.codebook.len(),
                    delta: false,
                },
            ))
        })
        .collect();
    let mut report = search_report(
        &outcome.report,
        l2_proxy_quality(budget.max_error, &outcome.report),
        storage,
    );
    for (i, sizes) in dropped {
        record_lossless(
            &mut report,
            &header.tensors[i].name,
            sizes.lossy,
            sizes.lossless,
        );
    }
    report.times = Some(SearchTimes {
        read_seconds: (t1 - t0) / 1e3,
        prepare_seconds: (t2 - t1) / 1e3,
        search_seconds: (t3 - t2) / 1e3,
        encode_seconds: None,
        total_seconds: None,
    });
    let annex = Annex {
        plan: outcome.plan,
        storage,
        base: None,
        report: serde_json::to_string(&report).map_err(|e| Failure(format!("report: {e}")))?,
    };
    let (sink, entries) =
        ins::write_snapshot(src, &header, &codes, &annex, ChunkSink::new(on_chunk))?;
    let mut result = finished(src, sink, &entries, None)?;
    result.inshrink = Some(Box::new(ins::inshrink_info(&annex, summaries)));
    Ok(result)
}
