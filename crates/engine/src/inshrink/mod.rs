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

use crate::snapshot_cmd::{open_snapshot, write_output};
use crate::source::{Checkpoint, Source};
use anyhow::{bail, Context, Result};
use bitlens_inshrink::search::{Options, QualityError, Trial, Verdict};
use bitlens_inshrink::{search, values, Group, L2Budget, Meta, Prepared, Quality, Setting};
use bitlens_inshrink::{ProtectStorage, TensorInput};
use bitlens_protocol::inshrink::{InshrinkInfo, QualityInfo, SearchReport, SettingInfo};
use bitlens_snapshot::inshrink::{self as ins, Annex, ChainLink, Levels, TensorCode};
use bitlens_snapshot::{SnapshotError, SnapshotReader};
use bitlens_tensors::{Dtype, ReadAt};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How protected values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtectDtype {
    /// In the tensor's own dtype: bit-exact.
    Original,
    /// In bf16, as the paper does (exact for bf16 tensors).
    Bf16,
}

/// The options of `compress --codec inshrink`.
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
    pub protect: ProtectDtype,
    /// Print the report as JSON on stdout.
    pub json: bool,
}

/// Longest chain of bases followed when restoring.
const MAX_CHAIN: usize = 10_000;

/// Seconds of a duration.
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The quality threshold measured by the user's command on each candidate checkpoint.
struct EvalCommand<'a> {
    cmd: String,
    max_degradation: f64,
    original_loss: f64,
    /// The original file's header bytes (`8 + N`).
    prefix: &'a [u8],
    /// Per tensor of the file, in file order: its original bytes (empty for searched tensors)
    /// and, for searched tensors, its index in the trial.
    tensors: &'a [(Vec<u8>, Option<usize>)],
    dir: PathBuf,
    evaluations: usize,
    time: Duration,
}

/// `cmd` with `{}` replaced by `path`, single-quoted for `sh`.
fn command_for(cmd: &str, path: &Path) -> String {
    let quoted = format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
    cmd.replace("{}", &quoted)
}

/// Runs `cmd` on `path` through `sh -c` and reads the loss: the last number on its stdout.
fn run_eval(cmd: &str, path: &Path) -> Result<f64, QualityError> {
    let line = command_for(cmd, path);
    let out = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .output()
        .map_err(|e| QualityError(format!("--eval-cmd `{line}` did not start: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(QualityError(format!(
            "--eval-cmd `{line}` failed ({}){}",
            out.status,
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )
            }
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .split_whitespace()
        .rev()
        .find_map(|w| {
            w.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
        })
        .ok_or_else(|| {
            QualityError(format!(
                "--eval-cmd `{line}` printed no number on stdout (the loss is the last number it prints)"
            ))
        })
}

impl Quality for EvalCommand<'_> {
    fn name(&self) -> String {
        format!(
            "loss degradation ≤ {} by --eval-cmd `{}` (original loss {})",
            self.max_degradation, self.cmd, self.original_loss
        )
    }

    fn check(&mut self, trial: &Trial<'_>) -> Result<Verdict, QualityError> {
        let started = Instant::now();
        let path = self.dir.join("candidate.safetensors");
        let write = || -> std::io::Result<()> {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
            f.write_all(self.prefix)?;
            for (bytes, searched) in self.tensors {
                match searched {
                    Some(i) => f.write_all(&trial.restored_bytes(*i))?,
                    None => f.write_all(bytes)?,
                }
            }
            f.flush()
        };
        write().map_err(|e| {
            QualityError(format!(
                "cannot write the candidate {}: {e}",
                path.display()
            ))
        })?;
        let loss = run_eval(&self.cmd, &path)?;
        self.evaluations += 1;
        self.time += started.elapsed();
        let degradation = (loss - self.original_loss) / self.original_loss;
        Ok(Verdict {
            accepted: degradation <= self.max_degradation,
            score: degradation,
        })
    }
}

impl Drop for EvalCommand<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
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

/// The restored levels of the snapshot at `path` (opened as `reader`), after its chain:
/// its base is `explicit` or the file its annex names next to `path`.
fn chain_levels(
    path: &Path,
    reader: &SnapshotReader<Source>,
    explicit: Option<&Path>,
    depth: usize,
) -> Result<(Levels, Annex)> {
    let ctx = || path.display().to_string();
    let annex = Annex::of(reader)
        .with_context(ctx)?
        .ok_or(ins::InshrinkError::NotInshrink)
        .with_context(ctx)?;
    let base = match &annex.base {
        None => None,
        Some(link) => {
            if depth >= MAX_CHAIN {
                bail!(
                    "{}: chain of more than {MAX_CHAIN} snapshots",
                    path.display()
                );
            }
            let base_path = match explicit {
                Some(p) => p.to_path_buf(),
                None => path.parent().unwrap_or(Path::new(".")).join(&link.name),
            };
            if !base_path.exists() {
                bail!(
                    "{}: its base snapshot `{}` is not at {}: pass it with --base",
                    path.display(),
                    link.name,
                    base_path.display()
                );
            }
            let (base_reader, _) = open_snapshot(&base_path)?;
            if base_reader.index_checksum != link.index_checksum {
                return Err(ins::InshrinkError::WrongBase(format!(
                    "{} has index checksum {:016x}, {} was made against `{}` with {:016x}",
                    base_path.display(),
                    base_reader.index_checksum,
                    path.display(),
                    link.name,
                    link.index_checksum
                ))
                .into());
            }
            Some(chain_levels(&base_path, &base_reader, None, depth + 1)?.0)
        }
    };
    let levels = ins::decode_levels(reader, base.as_ref()).with_context(ctx)?;
    Ok((levels, annex))
}

/// `bitlens decompress` of an inshrink snapshot: the safetensors file with the restored values.
pub fn decompress(
    input: &Path,
    reader: &SnapshotReader<Source>,
    output: &Path,
    base: Option<&Path>,
) -> Result<u64> {
    let (levels, _) = chain_levels(input, reader, base, 0)?;
    let mut written = 0u64;
    write_output(output, |out| {
        ins::decode_all(reader, &levels, &mut |b: &[u8]| {
            out.write_all(b).map_err(SnapshotError::from)?;
            written += b.len() as u64;
            Ok(())
        })
        .with_context(|| input.display().to_string())
    })?;
    Ok(written)
}

/// The JSON of a setting (the protocol's [`SettingInfo`], shared with the page).
fn setting_json(s: Setting) -> Value {
    serde_json::to_value(SettingInfo::from(s)).unwrap_or(Value::Null)
}

/// `bitlens compress --codec inshrink`.
pub fn compress(input: &Path, output: &Path, args: &Args) -> Result<()> {
    let started = Instant::now();
    let ck = Checkpoint::open(input)?;
    if ck.shards.len() != 1 || ck.index.is_some() || crate::remote::is_url(input)? {
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
    let storage = match args.protect {
        ProtectDtype::Original => ProtectStorage::Original,
        ProtectDtype::Bf16 => ProtectStorage::Bf16,
    };
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
    let (outcome, quality_json) = match (&args.eval_cmd, args.max_degradation) {
        (Some(cmd), Some(d)) => {
            let o0 = Instant::now();
            let original_loss = run_eval(cmd, input).map_err(|e| anyhow::anyhow!(e.0))?;
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
                search(&prep, &mut q, previous_plan.as_ref()).map_err(|e| anyhow::anyhow!(e.0))?;
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
                search(&prep, &mut q, previous_plan.as_ref()).map_err(|e| anyhow::anyhow!(e.0))?;
            let qj = QualityInfo::l2_proxy(e, &outcome.report);
            (outcome, qj)
        }
    };
    let search_time = t1.elapsed();
    // Streams: deltas against the base's levels of the same tensor (same dtype and length).
    let t2 = Instant::now();
    let base_levels = prev.as_ref().filter(|_| !args.no_delta).map(|(l, _, _)| l);
    let mut delta_tensors = 0;
    let codes: Vec<Option<TensorCode>> = tensors
        .iter()
        .enumerate()
        .map(|(i, (_, slot))| {
            slot.map(|k| {
                let q = &outcome.quantized[k];
                let name = &header.tensors[i].name;
                let base = base_levels
                    .and_then(|l| l.get(name))
                    .filter(|b| b.dtype == q.dtype && b.levels.len() == q.levels.len());
                delta_tensors += usize::from(base.is_some());
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
    let mut stored = SearchReport::new(&outcome.report, quality_json, storage);
    stored.optimizer = match &args.optimizer {
        Some(p) => json!({"path": p, "matched": matched, "all_zero": zero_moments,
            "tensors": searched.len(),
            "estimate": "sensitivity |w|·sqrt(v), v = Adam's second moment"})
        .into(),
        None => None,
    };
    let link = prev
        .as_ref()
        .filter(|_| delta_tensors > 0)
        .map(|(_, _, l)| l.clone());
    stored.base = match (&args.base, &prev) {
        (Some(p), Some((_, _, l))) => Some(json!({"path": p, "name": l.name,
            "plan_from_base": true, "delta_tensors": delta_tensors})),
        _ => None,
    };
    stored.times = Some(json!({"read_seconds": secs(read_time),
        "prepare_seconds": secs(prepare_time), "search_seconds": secs(search_time)}));
    let mut report = serde_json::to_value(&stored)?;
    let annex = Annex {
        plan: outcome.plan,
        storage,
        base: link.clone(),
        report: report.to_string(),
    };
    let mut written = 0u64;
    write_output(output, |out| {
        let mut counter = crate::snapshot_cmd::CountingWriter {
            inner: out,
            count: 0,
        };
        ins::write_snapshot(&shard.source, header, &codes, &annex, &mut counter)
            .with_context(|| input.display().to_string())?;
        written = counter.count;
        Ok(())
    })?;
    let encode_time = t2.elapsed();
    report["times"]["encode_seconds"] = json!(secs(encode_time));
    report["times"]["total_seconds"] = json!(secs(started.elapsed()));
    report["input_bytes"] = json!(header.file_size);
    report["output_bytes"] = json!(written);
    report["ratio"] = json!(written as f64 / header.file_size.max(1) as f64);
    report["tensors"] = outcome
        .report
        .tensors
        .iter()
        .map(|t| {
            json!({"name": t.name, "layer": t.kind.name(), "group": Group::of(t.kind).name(),
                "setting": setting_json(t.setting), "error": t.error})
        })
        .collect();
    print_report(&report, link.as_ref(), args.json)
}

/// The compress report: a few lines on stderr, or the JSON document on stdout.
fn print_report(report: &Value, link: Option<&ChainLink>, json: bool) -> Result<()> {
    if json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, report)?;
        writeln!(out)?;
        return Ok(());
    }
    let q = &report["quality"];
    eprintln!(
        "bitlens: inshrink, quality: {} — {} evaluations",
        q["name"].as_str().unwrap_or(""),
        q["evaluations"]
    );
    for g in report["groups"].as_array().into_iter().flatten() {
        eprintln!(
            "  group {:<9} {} ({}, {} trials, largest tensor error {:.4})",
            g["group"].as_str().unwrap_or(""),
            setting_text(&g["setting"]),
            g["mode"].as_str().unwrap_or(""),
            g["trials"],
            g["max_error"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(l) = link {
        eprintln!(
            "  delta against {} ({} tensors)",
            l.name, report["base"]["delta_tensors"]
        );
    }
    let t = &report["times"];
    eprintln!(
        "bitlens: {} → {} bytes (ratio {:.4}); search {:.2} s, encode {:.2} s, total {:.2} s",
        report["input_bytes"],
        report["output_bytes"],
        report["ratio"].as_f64().unwrap_or(0.0),
        t["search_seconds"].as_f64().unwrap_or(0.0),
        t["encode_seconds"].as_f64().unwrap_or(0.0),
        t["total_seconds"].as_f64().unwrap_or(0.0)
    );
    Ok(())
}

/// A setting's JSON as text ([`SettingInfo`]'s display).
pub fn setting_text(s: &Value) -> String {
    serde_json::from_value::<SettingInfo>(s.clone())
        .map_or_else(|_| "(unknown setting)".into(), |s| s.to_string())
}

/// What `inspect` shows of an inshrink snapshot: the protocol's [`InshrinkInfo`] (the plan, the
/// search report, the groups' largest achieved errors; the page shows the same document) and per
/// tensor its stream's setting, achieved error and protected count (read from the streams; `null`
/// for tensors of other codecs).
pub fn inspect_json(reader: &SnapshotReader<Source>) -> Result<Option<(Value, Vec<Value>)>> {
    let Some(mut info) = InshrinkInfo::of_reader(reader, true)? else {
        return Ok(None);
    };
    let tensors = reader
        .entries
        .iter()
        .map(|e| {
            info.tensor(&e.name)
                .and_then(|t| serde_json::to_value(t).ok())
                .unwrap_or(Value::Null)
        })
        .collect();
    info.tensors.clear();
    Ok(Some((serde_json::to_value(&info)?, tensors)))
}
