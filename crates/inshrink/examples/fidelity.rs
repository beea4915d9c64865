//! The crate-level measurements behind BENCHMARKS.md's Inshrinkerator section (issue 15), run by
//! `tests/python/bench_inshrink.py` on a real training run's checkpoints; the CLI does not expose
//! them. Prints one JSON object per line on stdout.
//!
//! * `fidelity delta [--max-error E] LIST` — LIST is a text file, one checkpoint per line,
//!   `MODEL<TAB>OPTIMIZER<TAB>MAIN<TAB>EMBEDDING`, a setting being `exact` or
//!   `BINS,PRUNE,METRIC,PROTECT` (the plan `bitlens compress` chose, read from `inspect --json`).
//!   Per checkpoint, every float tensor is quantized under that plan (sensitivity from
//!   OPTIMIZER's `exp_avg_sq.<name>`) and encoded as a full stream and as a delta against the
//!   previous line's levels in the three variants of the paper's §9.3 / Figure 12: Huffman only
//!   (HE), run-length + Huffman in element order (RLE), and rearranged by source bucket before
//!   run-length coding (PE, the paper's scheme; what the CLI writes). Also: thread CPU time of
//!   quantize + full encode (compression speed on one core) and of the model-free search under
//!   `--max-error` (default 0.05) from the previous line's search result (§5: exhaustive at the
//!   first line, delta-neighbourhood after).
//! * `fidelity bins [--errors E,..] [--max-bins K] [--write DIR --bins B,..] MODEL` — the paper's
//!   Table 7: per float tensor, the fewest bins with which the uniform and the non-uniform
//!   quantizer (plain quantization: no pruning, no protection) meet each relative L2 error; with
//!   `--write`, MODEL with every float tensor quantized by each quantizer at each bin count of
//!   `--bins`, as `DIR/{uniform,nonuniform}-B.safetensors`, for judging by the model's loss.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bitlens_inshrink::config::{Configuration, Metric, Plan, Setting};
use bitlens_inshrink::quantize::{min_bins, Quantizer};
use bitlens_inshrink::search::{search, Options};
use bitlens_inshrink::stream::{encode, Meta};
use bitlens_inshrink::{
    delta, levels, values, L2Budget, NonUniform, Prepared, TensorInput, Uniform,
};
use bitlens_tensors::{Dtype, Header};
use std::fmt::Write as _;
use std::time::Instant;

/// A safetensors file: its bytes, parsed header and float tensors as `(index, f32 values)`.
struct File {
    bytes: Vec<u8>,
    header: Header,
    floats: Vec<(usize, Vec<f32>)>,
}

impl File {
    fn open(path: &str) -> File {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let size = bytes.len() as u64;
        let need = Header::needed_prefix(bytes[..8].try_into().unwrap(), size).unwrap() as usize;
        let header = Header::parse(&bytes[..need], size).unwrap();
        let mut floats = Vec::new();
        for (i, t) in header.tensors.iter().enumerate() {
            if matches!(t.dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16) {
                let (a, b) = header.file_range(t);
                floats.push((
                    i,
                    values::to_f32(&bytes[a as usize..b as usize], t.dtype).unwrap(),
                ));
            }
        }
        File {
            bytes,
            header,
            floats,
        }
    }

    fn name(&self, i: usize) -> &str {
        &self.header.tensors[i].name
    }

    fn dtype(&self, i: usize) -> Dtype {
        self.header.tensors[i].dtype
    }

    /// The values of tensor `name`, if it is a float tensor of this file.
    fn values(&self, name: &str) -> Option<&[f32]> {
        self.floats
            .iter()
            .find(|(i, _)| self.name(*i) == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// Thread CPU seconds since an arbitrary origin (wall time where unavailable).
fn cpu(origin: Instant) -> f64 {
    cpu_time::ThreadTime::try_now().map_or_else(
        |_| origin.elapsed().as_secs_f64(),
        |t| t.as_duration().as_secs_f64(),
    )
}

/// `exact` or `BINS,PRUNE,METRIC,PROTECT`.
fn parse_setting(s: &str) -> Setting {
    if s == "exact" {
        return Setting::Exact;
    }
    let f: Vec<&str> = s.split(',').collect();
    assert_eq!(f.len(), 4, "setting `{s}`: BINS,PRUNE,METRIC,PROTECT");
    Setting::Quantized(Configuration {
        bins: f[0].parse().unwrap(),
        prune: f[1].parse().unwrap(),
        metric: match f[2] {
            "magnitude" => Metric::Magnitude,
            "sensitivity" => Metric::Sensitivity,
            m => panic!("unknown metric {m}"),
        },
        protect: f[3].parse().unwrap(),
    })
}

/// A setting as JSON.
fn setting_json(s: Setting) -> String {
    match s {
        Setting::Exact => "\"exact\"".into(),
        Setting::Quantized(c) => format!(
            "{{\"bins\":{},\"prune\":{},\"metric\":\"{}\",\"protect\":{}}}",
            c.bins,
            c.prune,
            c.metric.name(),
            c.protect
        ),
    }
}

/// `fidelity delta`.
fn delta_cmd(list: &str, max_error: f64) {
    let origin = Instant::now();
    let text = std::fs::read_to_string(list).unwrap();
    let mut previous: Option<Vec<bitlens_inshrink::Quantized>> = None;
    let mut previous_search: Option<Plan> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "LIST line: MODEL OPTIMIZER MAIN EMBEDDING");
        let (model, opt) = (File::open(f[0]), File::open(f[1]));
        let plan = Plan {
            main: parse_setting(f[2]),
            embedding: parse_setting(f[3]),
        };
        let inputs: Vec<TensorInput> = model
            .floats
            .iter()
            .map(|(i, v)| TensorInput {
                name: model.name(*i),
                dtype: model.dtype(*i),
                values: v,
                second_moment: opt.values(&format!("exp_avg_sq.{}", model.name(*i))),
            })
            .collect();
        let original: u64 = model
            .floats
            .iter()
            .map(|(i, _)| model.header.tensors[*i].byte_len())
            .sum();
        let c0 = cpu(origin);
        let prep = Prepared::new(inputs, Options::default()).unwrap();
        let quantized = prep.apply(&plan);
        let mut full = 0u64;
        let metas: Vec<Meta> = (0..quantized.len())
            .map(|k| Meta {
                layer: prep.kind(k),
                error: 0.0,
            })
            .collect();
        for (q, meta) in quantized.iter().zip(&metas) {
            full += encode(q, meta, None, false).unwrap().len() as u64;
        }
        let compress_s = cpu(origin) - c0;
        // The three delta variants of §9.3, each a whole stream (header, codebook, protected
        // values and the level section).
        let mut variants = [0u64; 3];
        // Each tensor's PE stream, by name (the CLI may store a tensor whose lossy stream is not
        // smaller than its LMC frames by LMC instead; a caller compares tensor by tensor).
        let mut pe_tensors = String::new();
        if let Some(prev) = &previous {
            for (k, ((q, b), meta)) in quantized.iter().zip(prev).zip(&metas).enumerate() {
                let rle = encode(q, meta, Some(b), false).unwrap();
                let pe = encode(q, meta, Some(b), true).unwrap();
                let d = delta::cyclic_delta(&b.levels, b.level_count(), &q.levels, q.level_count());
                let (mut rle_section, mut he_section) = (Vec::new(), Vec::new());
                delta::encode_symbols(&d, b.level_count().max(q.level_count()), &mut rle_section);
                delta::encode_bytes(&d, &mut he_section);
                let he = rle.len() - rle_section.len() + he_section.len();
                variants[0] += he as u64;
                variants[1] += rle.len() as u64;
                variants[2] += pe.len() as u64;
                let name = &prep.tensors()[k].name;
                let _ = write!(
                    pe_tensors,
                    "{}\"{name}\":{}",
                    if k == 0 { "" } else { "," },
                    pe.len()
                );
            }
        }
        let mut errors = String::new();
        for (k, (q, t)) in quantized.iter().zip(prep.tensors()).enumerate() {
            let e = levels::relative_l2(t.values, &q.restore());
            let _ = write!(
                errors,
                "{}\"{}\":{}",
                if k == 0 { "" } else { "," },
                t.name,
                e
            );
        }
        let s0 = cpu(origin);
        let out = search(&prep, &mut L2Budget { max_error }, previous_search.as_ref()).unwrap();
        let search_s = cpu(origin) - s0;
        let trials: usize = out.report.groups.iter().map(|g| g.trials).sum();
        let migrated = previous.as_ref().map_or(0.0, |prev| {
            let (moved, n) = quantized
                .iter()
                .zip(prev)
                .fold((0u64, 0u64), |acc, (q, b)| {
                    let m = q
                        .levels
                        .iter()
                        .zip(&b.levels)
                        .filter(|(x, y)| x != y)
                        .count();
                    (acc.0 + m as u64, acc.1 + q.levels.len() as u64)
                });
            moved as f64 / n.max(1) as f64
        });
        println!(
            "{{\"model\":\"{}\",\"original_bytes\":{original},\"full_bytes\":{full},\
             \"delta_bytes\":{{\"he\":{},\"rle\":{},\"pe\":{}}},\"pe_tensors\":{{{pe_tensors}}},\"has_base\":{},\
             \"changed_levels\":{migrated},\"compress_cpu_seconds\":{compress_s},\
             \"errors\":{{{errors}}},\"proxy_search\":{{\"max_error\":{max_error},\
             \"cpu_seconds\":{search_s},\"trials\":{trials},\"main\":{},\"embedding\":{}}}}}",
            f[0],
            variants[0],
            variants[1],
            variants[2],
            previous.is_some(),
            setting_json(out.plan.main),
            setting_json(out.plan.embedding)
        );
        previous = Some(quantized);
        previous_search = Some(out.plan);
    }
}

/// `values` quantized to `quantizer`'s `bins` centroids.
fn restore(quantizer: &dyn Quantizer, values: &[f32], bins: usize) -> Vec<f32> {
    let cb = quantizer.fit(values, bins);
    values
        .iter()
        .map(|&x| cb.centroids()[cb.assign(x)])
        .collect()
}

/// `fidelity bins`.
fn bins_cmd(path: &str, errors: &[f64], max_bins: usize, write: Option<(&str, &[usize])>) {
    let file = File::open(path);
    let quantizers: [(&str, &dyn Quantizer); 2] = [
        ("nonuniform", &NonUniform::default()),
        ("uniform", &Uniform),
    ];
    for (i, v) in &file.floats {
        let mut fields = String::new();
        for (name, q) in quantizers {
            let found: Vec<String> = errors
                .iter()
                .map(|&e| {
                    min_bins(q, v, e, max_bins)
                        .map_or_else(|| "null".to_string(), |(b, _)| b.to_string())
                })
                .collect();
            let _ = write!(fields, ",\"{name}\":[{}]", found.join(","));
        }
        println!(
            "{{\"tensor\":\"{}\",\"elements\":{},\"errors\":{:?}{fields}}}",
            file.name(*i),
            v.len(),
            errors
        );
    }
    let Some((dir, counts)) = write else {
        return;
    };
    for (name, q) in quantizers {
        for &bins in counts {
            let mut out = file.bytes.clone();
            for (i, v) in &file.floats {
                let (a, b) = file.header.file_range(&file.header.tensors[*i]);
                let bytes = values::from_f32(&restore(q, v, bins), file.dtype(*i)).unwrap();
                out[a as usize..b as usize].copy_from_slice(&bytes);
            }
            let p = format!("{dir}/{name}-{bins}.safetensors");
            std::fs::write(&p, out).unwrap();
        }
    }
    println!("{{\"written\":\"{dir}\"}}");
}

/// A comma-separated list.
fn list<T: std::str::FromStr>(s: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    s.split(',').map(|x| x.parse().unwrap()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].as_str())
    };
    let positional = args.last().expect("usage: see the module doc");
    match args.first().map(String::as_str) {
        Some("delta") => delta_cmd(
            positional,
            flag("--max-error").map_or(0.05, |s| s.parse().unwrap()),
        ),
        Some("bins") => {
            let counts: Vec<usize> = flag("--bins").map(list).unwrap_or_default();
            bins_cmd(
                positional,
                &flag("--errors").map_or_else(|| vec![0.01, 0.05, 0.1], list),
                flag("--max-bins").map_or(256, |s| s.parse().unwrap()),
                flag("--write").map(|d| (d, counts.as_slice())),
            );
        }
        _ => panic!("usage: fidelity delta [--max-error E] LIST | fidelity bins [...] MODEL"),
    }
}
