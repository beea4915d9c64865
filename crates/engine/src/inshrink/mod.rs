//! `bitlens compress --codec inshrink` (Inshrinkerator, paper 002) and the restoring of its
//! snapshots and chains.
//!
//! Compressing reads the whole checkpoint (the search needs every tensor's sketch), ranks it
//! (magnitude; with `--optimizer`, sensitivity from Adam's second moment), searches a plan under
//! the quality threshold and writes each float tensor's stream into a version 4 snapshot
//! (`bitlens_snapshot::inshrink`). The threshold is the paper's — relative degradation of the
//! model's loss, measured by the user's `--eval-cmd` on every candidate the search asks about —
//! or the model-free proxy `--max-error` (per-tensor relative L2 error). With `--base PREV.bls`
//! the search starts from PREV's plan (delta-neighbourhood search, §5) and the streams are
//! deltas against PREV's levels (§6); PREV's own chain is restored first.
//!
//! A snapshot names its base by file name and index checksum; restoring looks for it next to the
//! snapshot, or takes `--base`, and each base's base next to that base.
//!
//! - [`eval`]: the `--eval-cmd` threshold.
//! - [`restore`]: snapshots restored through their chain.

mod eval;
mod restore;

pub use restore::decompress;

use crate::bail;
use crate::checkpoint::Checkpoint;
use crate::error::{Context, Error, Result};
use crate::output::{write_output, CountingWriter};
use crate::snapshots::open_snapshot;
use crate::source::{is_url, Source};
use bitlens_inshrink::report::{l2_proxy_quality, record_lossless, search_report};
use bitlens_inshrink::search::Options;
use bitlens_inshrink::{search, values, Group, L2Budget, Meta, Prepared, Quality};
use bitlens_inshrink::{ProtectStorage, TensorInput};
use bitlens_report::inshrink::{
    CompressReport, OptimizerInfo, QualityInfo, SearchBase, SearchTimes, SettingInfo, TensorSearch,
};
use bitlens_snapshot::inshrink::{self as ins, Annex, TensorCode};
use bitlens_tensors::{Dtype, ReadAt};
use eval::{run_eval, EvalCommand};
use restore::chain_levels;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The options of `compress --codec inshrink`.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// Model-free proxy: per-tensor relative L2 error budget.
    pub max_error: Option<f64>,
    /// Evaluation command (`{}` is the candidate's path).
    pub eval_cmd: Option<String>,
    /// Largest accepted relative loss degradation.
    pub max_degradation: Option<f64>,
    /// The previous snapshot of the chain.
    pub base: Option<PathBuf>,
    /// Search from the base's plan but store full streams (no delta).
    pub no_delta: bool,
    /// Adam state with `exp_avg_sq.<name>` tensors.
    pub optimizer: Option<PathBuf>,
    /// Storage of protected values.
    pub protect: ProtectStorage,
}

/// Seconds of a duration.
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The second moment of tensor `name` in an optimizer state: `exp_avg_sq.<name>` (as
/// scripts/train_digits.py writes it), `<name>.exp_avg_sq` or `state.<name>.exp_avg_sq`.
fn second_moment_names(name: &str) -> [String; 3] {
    [
        format!("exp_avg_sq.{name}"),
        format!("{name}.exp_avg_sq"),
        format!("state.{name}.exp_avg_sq"),
    ]
}

/// Reads tensor `t` of a checkpoint's single shard.
fn read_tensor(src: &Source, header: &bitlens_tensors::Header, i: usize) -> Result<Vec<u8>> {
    let (a, b) = header.file_range(&header.tensors[i]);
    let mut buf = vec![0u8; (b - a) as usize];
    src.read_exact_at(a, &mut buf)?;
    Ok(buf)
}

/// The second moments of the optimizer state at `path` for `names` (f32 values, any float
/// dtype; `None` where none matches by name and length), and how many matched but are all zero
/// (an optimizer that has not stepped yet: no ranking, so left out — a zero sensitivity would
/// put every element above the protection threshold).
fn load_second_moments(
    path: &Path,
    names: &[(String, u64)],
) -> Result<(Vec<Option<Vec<f32>>>, usize)> {
    let ck = Checkpoint::open(path)?;
    if ck.shards.len() != 1 {
        bail!(
            "--optimizer {}: give a single safetensors file",
            path.display()
        );
    }
    let shard = &ck.shards[0];
    let mut out = Vec::new();
    let mut zero = 0;
    for (name, elements) in names {
        let found = second_moment_names(name)
            .iter()
            .find_map(|n| shard.header.tensors.iter().position(|t| &t.name == n));
        let v = match found {
            Some(i) => {
                let t = &shard.header.tensors[i];
                let bytes = read_tensor(&shard.source, &shard.header, i)?;
                match values::to_f32(&bytes, t.dtype) {
                    Ok(v) if v.len() as u64 == *elements && v.iter().all(|&x| x == 0.0) => {
                        zero += 1;
                        None
                    }
                    Ok(v) if v.len() as u64 == *elements => Some(v),
                    _ => None,
                }
            }
            None => None,
        };
        out.push(v);
    }
    Ok((out, zero))
}

/// `bitlens compress --codec inshrink`: the local safetensors file `input` searched under the
/// threshold `args` gives and written to the version 4 snapshot `output`; the report of the
/// search, the sizes and every tensor's setting and error.
pub fn compress(input: &Path, output: &Path, args: &Args) -> Result<CompressReport> {
    let started = Instant::now();
    let ck = Checkpoint::open(input)?;
    if ck.shards.len() != 1 || ck.index.is_some() || is_url(input)? {
        bail!(
            "--codec inshrink compresses one local safetensors file, {} is not",
            input.display()
        );
    }
    match (&args.max_error, &args.eval_cmd, &args.max_degradation) {
        (Some(e), None, None) if *e >= 0.0 => {}
        (None, Some(c), Some(d)) if *d >= 0.0 => {
            if !c.contains("{}") {
                bail!("--eval-cmd must contain {{}} (replaced by the candidate checkpoint's path)");
            }
        }
        _ => bail!(
            "--codec inshrink needs a quality threshold: --max-error E (per-tensor relative L2 \
             error), or --eval-cmd \"CMD {{}}\" with --max-degradation D (relative loss increase)"
        ),
    }
    let shard = &ck.shards[0];
    let header = &shard.header;
    let mut prefix = vec![0u8; header.data_start() as usize];
    shard.source.read_exact_at(0, &mut prefix)?;
    // Float tensors as f32 values for the search; the others' bytes (candidates copy them).
    let mut tensors: Vec<(Vec<u8>, Option<usize>)> = Vec::new();
    let mut vals: Vec<Vec<f32>> = Vec::new();
    let mut searched: Vec<usize> = Vec::new();
    for (i, t) in header.tensors.iter().enumerate() {
        let bytes = read_tensor(&shard.source, header, i)?;
        let float = matches!(t.dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16);
        if float {
            vals.push(values::to_f32(&bytes, t.dtype).with_context(|| t.name.clone())?);
            searched.push(i);
            tensors.push((Vec::new(), Some(searched.len() - 1)));
        } else {
            tensors.push((bytes, None));
        }
    }
    let read_time = started.elapsed();
    let (moments, zero_moments) = match &args.optimizer {
        Some(p) => {
            let names: Vec<(String, u64)> = searched
                .iter()
                .zip(&vals)
                .map(|(&i, v)| (header.tensors[i].name.clone(), v.len() as u64))
                .collect();
            load_second_moments(p, &names)?
        }
        None => (vec![None; searched.len()], 0),
    };
    let matched = moments.iter().filter(|m| m.is_some()).count();
    if args.optimizer.is_some() && matched + zero_moments == 0 {
        bail!(
            "--optimizer {}: no `exp_avg_sq.<name>` tensor matches a tensor of {}",
            args.optimizer.as_deref().unwrap_or(Path::new("")).display(),
            input.display()
        );
    }
    // The previous snapshot of the chain: its levels (deltas) and plan (search start).
    let prev = match &args.base {
        Some(b) => {
            let (r, size) = open_snapshot(b)?;
            let (levels, annex) = chain_levels(b, &r, None, 0)?;
            let name = b
                .file_name()
                .with_context(|| format!("--base {}: not a file", b.display()))?
                .to_string_lossy()
                .to_string();
            Some((levels, annex, ins::link_to(&r, &name, size)))
        }
        None => None,
    };
    let t0 = Instant::now();
    let inputs: Vec<TensorInput> = searched
        .iter()
        .zip(&vals)
        .zip(&moments)
        .map(|((&i, v), m)| TensorInput {
            name: &header.tensors[i].name,
            dtype: header.tensors[i].dtype,
            values: v,
            second_moment: m.as_deref(),
        })
        .collect();
    let storage = args.protect;
    let prep = Prepared::new(
        inputs,
        Options {
            storage,
            ..Options::default()
        },
    )
    .context("sketching the importances")?;
    let prepare_time = t0.elapsed();
    let t1 = Instant::now();
    let previous_plan = prev.as_ref().map(|(_, a, _)| a.plan);
    let (outcome, quality) = match (&args.eval_cmd, args.max_degradation) {
        (Some(cmd), Some(d)) => {
            let o0 = Instant::now();
            let original_loss = run_eval(cmd, input).map_err(|e| Error::invalid(e.0))?;
            let original_time = o0.elapsed();
            if original_loss.is_nan() || original_loss <= 0.0 {
                bail!(
                    "--eval-cmd `{cmd}`: the original loss is {original_loss}; a relative \
                     degradation needs a positive loss"
                );
            }
            let dir = std::env::temp_dir().join(format!(
                "bitlens-inshrink-{}-{}",
                std::process::id(),
                started.elapsed().as_nanos()
            ));
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
            let mut q = EvalCommand {
                cmd: cmd.clone(),
                max_degradation: d,
                original_loss,
                prefix: &prefix,
                tensors: &tensors,
                dir,
                evaluations: 0,
                time: Duration::ZERO,
            };
            let outcome =
                search(&prep, &mut q, previous_plan.as_ref()).map_err(|e| Error::invalid(e.0))?;
            let qj = QualityInfo {
                kind: "eval-cmd".into(),
                name: q.name(),
                evaluations: q.evaluations + 1,
                max_error: None,
                command: Some(cmd.clone()),
                max_degradation: Some(d),
                original_loss: Some(original_loss),
                evaluation_seconds: Some(secs(q.time + original_time)),
            };
            (outcome, qj)
        }
        _ => {
            let e = args.max_error.unwrap_or(0.0);
            let mut q = L2Budget { max_error: e };
            let outcome =
                search(&prep, &mut q, previous_plan.as_ref()).map_err(|e| Error::invalid(e.0))?;
            let qj = l2_proxy_quality(e, &outcome.report);
            (outcome, qj)
        }
    };
    let search_time = t1.elapsed();
    // Streams: deltas against the base's levels of the same tensor (same dtype and length).
    let t2 = Instant::now();
    let base_levels = prev.as_ref().filter(|_| !args.no_delta).map(|(l, _, _)| l);
    let mut codes: Vec<Option<TensorCode>> = tensors
        .iter()
        .enumerate()
        .map(|(i, (_, slot))| {
            slot.map(|k| {
                let q = &outcome.quantized[k];
                let name = &header.tensors[i].name;
                let base = base_levels
                    .and_then(|l| l.get(name))
                    .filter(|b| b.dtype == q.dtype && b.levels.len() == q.levels.len());
                TensorCode {
                    quantized: q,
                    base,
                    meta: Meta {
                        layer: prep.kind(k),
                        error: outcome.report.tensors[k].error as f32,
                    },
                }
            })
        })
        .collect();
    // Never larger than lossless: a tensor whose streams are not smaller than its LMC frames is
    // stored by LMC (exact tensors always are, in `write_snapshot`).
    let lossless_instead = ins::drop_larger(&shard.source, header, &mut codes)
        .with_context(|| input.display().to_string())?;
    // Exact tensors are written by LMC, never as a delta.
    let delta_tensors = codes
        .iter()
        .flatten()
        .filter(|c| c.base.is_some() && c.quantized.setting != bitlens_inshrink::Setting::Exact)
        .count();
    let mut stored = search_report(&outcome.report, quality, storage);
    for &(i, sizes) in &lossless_instead {
        record_lossless(
            &mut stored,
            &header.tensors[i].name,
            sizes.lossy,
            sizes.lossless,
        );
    }
    stored.optimizer = args.optimizer.as_ref().map(|p| OptimizerInfo {
        path: p.clone(),
        matched,
        all_zero: zero_moments,
        tensors: searched.len(),
        estimate: "sensitivity |w|·sqrt(v), v = Adam's second moment".into(),
    });
    let link = prev
        .as_ref()
        .filter(|_| delta_tensors > 0)
        .map(|(_, _, l)| l.clone());
    stored.base = match (&args.base, &prev) {
        (Some(p), Some((_, _, l))) => Some(SearchBase {
            path: p.clone(),
            name: l.name.clone(),
            plan_from_base: true,
            delta_tensors,
        }),
        _ => None,
    };
    stored.times = Some(SearchTimes {
        read_seconds: secs(read_time),
        prepare_seconds: secs(prepare_time),
        search_seconds: secs(search_time),
        encode_seconds: None,
        total_seconds: None,
    });
    let annex = Annex {
        plan: outcome.plan,
        storage,
        base: link,
        report: serde_json::to_string(&stored)
            .map_err(|e| Error::invalid(format!("the search report does not serialize: {e}")))?,
    };
    // The lossy snapshot in memory (the search already holds every value), then the lossless
    // one's size: when the annex and the little the lossy codes saved do not pay for each other,
    // the file is the plain LMC snapshot, so a lossy snapshot is never larger than the lossless.
    let (lossy, _) = ins::write_snapshot(&shard.source, header, &codes, &annex, Vec::new())
        .with_context(|| input.display().to_string())?;
    let lmc = |t: &bitlens_tensors::TensorInfo| {
        bitlens_snapshot::Codec::lmc_for_width(t.dtype.lane_bytes())
    };
    let mut counter = CountingWriter {
        inner: std::io::sink(),
        count: 0,
    };
    bitlens_snapshot::compress(&shard.source, header, None, &lmc, &mut counter, &mut |_| {})
        .with_context(|| input.display().to_string())?;
    let lossless_file = counter.count <= lossy.len() as u64;
    let mut written = 0u64;
    write_output(output, |out| {
        let mut counter = CountingWriter {
            inner: out,
            count: 0,
        };
        if lossless_file {
            bitlens_snapshot::compress(
                &shard.source,
                header,
                None,
                &lmc,
                &mut counter,
                &mut |_| {},
            )
            .with_context(|| input.display().to_string())?;
        } else {
            counter
                .write_all(&lossy)
                .with_context(|| format!("{}: write failed", output.display()))?;
        }
        written = counter.count;
        Ok(())
    })?;
    let encode_time = t2.elapsed();
    if let Some(t) = &mut stored.times {
        t.encode_seconds = Some(secs(encode_time));
        t.total_seconds = Some(secs(started.elapsed()));
    }
    let tensors = outcome
        .report
        .tensors
        .iter()
        .map(|t| {
            let lossless = lossless_instead
                .iter()
                .any(|&(i, _)| header.tensors[i].name == t.name);
            TensorSearch {
                name: t.name.clone(),
                layer: t.kind.name().to_owned(),
                group: Group::of(t.kind).name().to_owned(),
                setting: if lossless {
                    SettingInfo::exact()
                } else {
                    t.setting.into()
                },
                error: if lossless { 0.0 } else { t.error },
            }
        })
        .collect();
    Ok(CompressReport {
        lossless_file,
        search: stored,
        input_bytes: header.file_size,
        output_bytes: written,
        ratio: written as f64 / header.file_size.max(1) as f64,
        tensors,
    })
}
