//! One tensor in detail: bit-position set ratios with sign / exponent / mantissa regions,
//! sign / exponent / mantissa histograms with their entropies, the value histogram with min / max
//! / mean / std, byte-group entropies, and the 64 KiB block entropy profile. On top: the tensor's
//! codec override for compression, and a comparison of every codec on this tensor (for a tensor of
//! a `.bls` snapshot: how it is stored and its decoding, [`crate::ui::views::snapshot::detail`]).
//!
//! A ggml block-quantized tensor (GGUF `Q4_K`, …) shows, in this order, its Quantization
//! ([`crate::ui::views::quant`]: scales and codes), its dequantized values' histogram and
//! sign / exponent / mantissa charts (as an `F32` tensor's, titled as dequantized values, chart ids
//! prefixed `dq-`), and the bit and entropy charts of its stored block bytes (as `U8`, what a
//! codec sees), titled as such.

use crate::model::bits::BitRole;
use crate::model::checkpoint::{Checkpoint, TensorRow};
use crate::model::codec::{tensor_presets, RoundtripRow};
use crate::model::format::{bytes, count, number, percent, shape};
use crate::ui::app::codecs::{CodecMsg, CodecState, JobKind};
use crate::ui::app::{App, Msg};
use crate::ui::charts::hbars::{HBarChart, HBarRow};
use crate::ui::charts::{Bar, BarChart, LineChart, Series};
use crate::ui::shared::Shared;
use crate::ui::views::bitcharts::{bit_bars, role_legend};
use crate::ui::views::codecs::job_progress;
use crate::ui::views::quant;
use bitlens_stats::{FloatStats, TensorStats, ValueStats};
use bitlens_tensors::format::ElementType;
use web_sys::HtmlSelectElement;
use yew::html::Scope;
use yew::prelude::*;

/// Most points drawn per block-entropy series (longer profiles are sampled evenly).
const MAX_PROFILE_POINTS: usize = 1500;

/// Most bars drawn for a mantissa histogram (wider ones are summed into this many bins).
const MAX_MANTISSA_BARS: usize = 128;

/// What the detail view shows.
pub struct Props<'a> {
    /// The active checkpoint.
    pub checkpoint: Option<&'a Checkpoint>,
    /// The tensor chosen (the largest when none).
    pub detail: Option<&'a str>,
    /// The codec panel: the tensor's override, comparisons, the running job.
    pub codecs: &'a CodecState,
}

fn hist_bars(counts: &[u64], label: impl Fn(usize) -> String, color: &str, what: &str) -> Vec<Bar> {
    let total: u64 = counts.iter().sum::<u64>().max(1);
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| Bar {
            label: label(i),
            value: c as f64,
            color: color.to_owned(),
            tip: format!(
                "{what} {}: {} values ({})",
                label(i),
                count(c),
                percent(c as f64 / total as f64)
            ),
        })
        .collect()
}

/// Which values charts describe: a tensor's own, or a quantized tensor's dequantized ones.
#[derive(Clone, Copy)]
struct Of {
    /// Prefix of the charts' ids.
    id: &'static str,
    /// Prefix of their titles.
    title: &'static str,
}

/// A tensor's own values (chart ids as they always were).
const OWN: Of = Of { id: "", title: "" };

/// A block-quantized tensor's dequantized values.
const DEQUANTIZED: Of = Of {
    id: "dq-",
    title: "Dequantized values: ",
};

fn float_charts(f: Option<&FloatStats>, of: Of) -> Html {
    let Some(f) = f else {
        return html! { <p class="note">{ "No sign / exponent / mantissa fields: not a floating-point tensor." }</p> };
    };
    let bias = (1u64 << f.exponent_bits.saturating_sub(1)).saturating_sub(1);
    // Exponent: show the used range (±1), the rest is empty.
    let used: Vec<usize> = (0..f.exponent_hist.len())
        .filter(|&i| f.exponent_hist[i] > 0)
        .collect();
    let (lo, hi) = match (used.first(), used.last()) {
        (Some(&a), Some(&b)) => (a.saturating_sub(1), (b + 1).min(f.exponent_hist.len() - 1)),
        _ => (0, f.exponent_hist.len().saturating_sub(1)),
    };
    let exp_bars = hist_bars(
        &f.exponent_hist[lo..=hi],
        |i| (i + lo).to_string(),
        BitRole::Exponent.color(),
        "biased exponent",
    );
    let mant_counts: Vec<u64> = if f.mantissa_hist.len() > MAX_MANTISSA_BARS {
        let per = f.mantissa_hist.len() / MAX_MANTISSA_BARS;
        f.mantissa_hist
            .chunks(per)
            .map(|c| c.iter().sum())
            .collect()
    } else {
        f.mantissa_hist.clone()
    };
    let per = f.mantissa_hist.len() / mant_counts.len().max(1);
    let mant_bars = hist_bars(
        &mant_counts,
        |i| {
            if per > 1 {
                format!("{}–{}", i * per, (i + 1) * per - 1)
            } else {
                i.to_string()
            }
        },
        BitRole::Mantissa.color(),
        "mantissa",
    );
    let sign_bars = hist_bars(
        &f.sign_hist,
        |i| if i == 0 { "+".into() } else { "−".into() },
        BitRole::Sign.color(),
        "sign",
    );
    html! {
        <div class="chart-row three">
            <BarChart id={format!("{}sign-hist", of.id)} title={format!("{}Sign — entropy {} bits", of.title, number(f.sign_entropy, 3))}
                      bars={Shared::new(sign_bars)} x_label="sign" y_label="values" height={240.0} />
            <BarChart id={format!("{}exponent-hist", of.id)} title={format!("{}Exponent — entropy {} bits (of {})", of.title, number(f.exponent_entropy, 3), f.exponent_bits)}
                      bars={Shared::new(exp_bars)} x_label={format!("biased exponent (bias {bias})")} y_label="values" height={240.0} />
            <BarChart id={format!("{}mantissa-hist", of.id)} title={format!("{}Mantissa, leading {} bits — entropy {} bits", of.title, f.mantissa_hist_bits, number(f.mantissa_entropy, 3))}
                      bars={Shared::new(mant_bars)} x_label="mantissa value" y_label="values" height={240.0} />
        </div>
    }
}

fn value_chart(v: Option<&ValueStats>, of: Of) -> Html {
    let Some(v) = v else {
        return html! { <p class="note">{ "No value statistics for this dtype." }</p> };
    };
    let opt = |x: Option<f64>| x.map_or("–".into(), |x| number(x, 4));
    let facts = html! {
        <dl class="facts" data-facts={format!("{}values", of.id)}>
            <dt>{ "min" }</dt><dd data-k="min">{ opt(v.min) }</dd>
            <dt>{ "max" }</dt><dd data-k="max">{ opt(v.max) }</dd>
            <dt>{ "mean" }</dt><dd data-k="mean">{ opt(v.mean) }</dd>
            <dt>{ "std" }</dt><dd data-k="std">{ opt(v.std) }</dd>
            <dt>{ "zeros" }</dt><dd>{ count(v.zeros) }</dd>
            <dt>{ "NaN" }</dt><dd>{ count(v.nan) }</dd>
            <dt>{ "±Inf" }</dt><dd>{ format!("{} / {}", count(v.pos_inf), count(v.neg_inf)) }</dd>
        </dl>
    };
    let chart = v.histogram.as_ref().map(|h| {
        let width = (h.hi - h.lo) / h.counts.len().max(1) as f64;
        let total: u64 = h.counts.iter().sum::<u64>().max(1);
        let bars: Vec<Bar> = h
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let a = h.lo + i as f64 * width;
                Bar {
                    label: number(a + width / 2.0, 2),
                    value: c as f64,
                    color: "var(--chart-2)".into(),
                    tip: format!("[{}, {}): {} values ({})", number(a, 4), number(a + width, 4), count(c), percent(c as f64 / total as f64)),
                }
            })
            .collect();
        html! {
            <BarChart id={format!("{}value-hist", of.id)} title={format!("{}Values — {} bins from min to max{}", of.title, h.counts.len(), if h.exact { "" } else { " (binned by the top 16 bits)" })}
                      bars={Shared::new(bars)} x_label="value (bin centre)" y_label="values" height={260.0} />
        }
    });
    html! {
        <div class="chart-row value-row">
            { chart.unwrap_or_default() }
            { facts }
        </div>
    }
}

/// Byte-group and block entropies; `what` prefixes the titles.
fn entropy_charts(st: &TensorStats, what: &str) -> Html {
    let lanes = st.byte_group_entropy.len();
    let group_name = |g: usize| {
        if lanes == 1 {
            "byte".to_owned()
        } else if g == lanes - 1 {
            format!("byte {g} (msb)")
        } else if g == 0 {
            "byte 0 (lsb)".to_owned()
        } else {
            format!("byte {g}")
        }
    };
    let bars: Vec<Bar> = (0..lanes)
        .rev()
        .map(|g| Bar {
            label: group_name(g),
            value: st.byte_group_entropy[g],
            color: "var(--chart-3)".into(),
            tip: format!(
                "{}: {} bits/byte",
                group_name(g),
                number(st.byte_group_entropy[g], 4)
            ),
        })
        .collect();
    let lane_bytes = lanes.max(1) as f64;
    let block_mib = st.block_bytes as f64 * lane_bytes / (1 << 20) as f64;
    let series: Vec<Series> = (0..lanes)
        .rev()
        .map(|g| {
            let blocks = &st.block_entropy[g];
            let step = blocks.len().div_ceil(MAX_PROFILE_POINTS).max(1);
            let hue = 30.0 + 300.0 * g as f64 / lanes.max(1) as f64;
            Series {
                name: group_name(g),
                color: format!("hsl({hue:.0},65%,45%)"),
                points: blocks
                    .iter()
                    .enumerate()
                    .step_by(step)
                    .map(|(i, &e)| (i as f64 * block_mib, e as f64))
                    .collect(),
            }
        })
        .collect();
    html! {
        <div class="chart-row">
            <BarChart id="byte-group-entropy" title={format!("{what}Byte-group entropy — all bytes {} bits/byte", number(st.byte_entropy, 4))}
                      bars={Shared::new(bars)} x_label="byte group" y_label="entropy (bits/byte)"
                      y_max={Some(8.0)} reference={Some((8.0, AttrValue::from("8 = incompressible")))} height={260.0} />
            <LineChart id="block-entropy" title={format!("{what}Entropy per 64 KiB block of each byte group ({} blocks); predicted {} of {} ({:.3})",
                           st.block_entropy.first().map_or(0, |b| b.len()), bytes(st.predicted_bytes), bytes(st.bytes), st.predicted_ratio)}
                       series={Shared::new(series)} x_label="offset in the tensor (MiB)" y_label="entropy (bits/byte)"
                       y_range={Some((0.0, 8.0))} height={260.0} />
        </div>
    }
}

/// Every chart of one tensor's statistics: bit-set ratios, sign / exponent / mantissa, values,
/// byte-group and block entropies (the Detail view; the Codecs view's preview of a remote
/// snapshot's tensor); for a block-quantized tensor also its Quantization, and the value charts
/// of its dequantized values (see the module doc).
pub fn stats_charts(st: &TensorStats) -> Html {
    let Some(ty) = &st.element_type else {
        return html! {
            <>
                { bit_chart(st, "Fraction of values with each bit set") }
                { float_charts(st.float.as_ref(), OWN) }
                { value_chart(st.values.as_ref(), OWN) }
                { entropy_charts(st, "") }
            </>
        };
    };
    let dq = &st.dequantized;
    html! {
        <>
            { quant::section(ty, st) }
            <section class="dequantized" data-section="dequantized">
                <h3>{ format!("Dequantized values ({ty} → f32)") }</h3>
                if let Some(d) = dq {
                    { value_chart(d.values.as_ref(), DEQUANTIZED) }
                    { float_charts(d.float.as_ref(), DEQUANTIZED) }
                } else {
                    <p class="note">{ format!("{ty} is not dequantized (no reference kernel).") }</p>
                }
            </section>
            <section class="stored" data-section="stored">
                <h3>{ format!("Stored block bytes ({} as U8 bytes, what a codec compresses)", bytes(st.bytes)) }</h3>
                { bit_chart(st, "Stored block bytes: fraction with each bit set") }
                { entropy_charts(st, "Stored block bytes: ") }
            </section>
        </>
    }
}

/// The bit-position set ratios of `st`'s lanes.
fn bit_chart(st: &TensorStats, title: &str) -> Html {
    let (bars, bands) = bit_bars(st.dtype, &st.bit_set_ratio, "set in");
    html! {
        <BarChart id="bit-set-ratio" title={title.to_owned()}
                  bars={Shared::new(bars)} bands={Some(Shared::new(bands))}
                  x_label="bit position (most significant → least significant)" y_label="fraction set"
                  y_max={Some(1.0)} legend={role_legend(st.dtype)} />
    }
}

/// The select of checkpoint `c`'s tensors with `current` selected (Detail's and Values').
pub fn tensor_picker(link: &Scope<App>, c: &Checkpoint, current: &str) -> Html {
    let onchange = link.callback(|e: Event| {
        let sel: HtmlSelectElement = e.target_unchecked_into();
        Msg::Pick(sel.value())
    });
    html! {
        <select id="tensor-select" title={current.to_string()} {onchange}>
            { for c.rows.iter().map(|t| html! {
                <option value={t.name.clone()} selected={t.name == current} title={t.name.clone()}>{ &t.name }</option>
            }) }
        </select>
    }
}

/// The detail of the selected tensor of the active checkpoint.
pub fn view(link: &Scope<App>, on: &Callback<CodecMsg>, s: &Props) -> Html {
    let Some(c) = s.checkpoint else {
        return html! { <p>{ "No checkpoint selected." }</p> };
    };
    let Some(ri) = c.detail_row(s.detail) else {
        return html! { <p>{ "This checkpoint has no tensors." }</p> };
    };
    let r = &c.rows[ri];
    let picker = tensor_picker(link, c, &r.name);
    let snapshot = c.snapshot.as_deref();
    let body = match r.stats.as_deref() {
        None if snapshot.is_some() => {
            html! { <p class="note pending">{ "This tensor is being decoded from the snapshot (only its frames are read)…" }</p> }
        }
        None => {
            html! { <p class="note pending">{ "Statistics for this tensor are still being computed…" }</p> }
        }
        Some(st) => stats_charts(st),
    };
    // A snapshot's tensor: how it is stored and its decoding, not a codec choice.
    let codec = match snapshot {
        Some(snap) => crate::ui::views::snapshot::detail(on, s.codecs, snap, ri),
        None => codec_section(on, s.codecs, c.id, r),
    };
    html! {
        <section class="detail" data-view="detail" data-tensor={r.name.clone()}>
            <h2 class="tensor-name" id="detail-name">{ &r.name }</h2>
            <div class="detail-head">
                <label>{ "Tensor " }{ picker }</label>
                <span class="meta">{ format!("{} {} · {} params · {} · {} {} {}",
                    r.type_name(), shape(&r.shape), count(r.params), bytes(r.bytes), c.files[r.file].path,
                    if snapshot.is_some() { "· original data offset" } else { "at byte" }, r.offset) }</span>
                if snapshot.is_none() {
                    <button id="detail-values" title="This tensor's values as a zoomable map"
                        onclick={link.callback(|_| Msg::Tab(crate::ui::app::Tab::Values))}>{ "Values map" }</button>
                }
            </div>
            { codec }
            { body }
        </section>
    }
}

/// Per-tensor codec override and the codec comparison on this tensor.
fn codec_section(on: &Callback<CodecMsg>, s: &CodecState, ckpt: u32, r: &TensorRow) -> Html {
    let name = r.name.clone();
    let current = s.override_of(ckpt, &r.name);
    let on_override = {
        let name = name.clone();
        on.reform(move |e: Event| {
            let sel: HtmlSelectElement = e.target_unchecked_into();
            let v = sel.value();
            CodecMsg::SetOverride(name.clone(), (!v.is_empty()).then_some(v))
        })
    };
    let on_compare = on.reform(move |_| CodecMsg::CompareCodecs(name.clone()));
    let running = s.job.as_ref();
    let mine = running.filter(|j| matches!(&j.kind, JobKind::Roundtrip { ckpt: c, tensor } if *c == ckpt && *tensor == r.name));
    let rows = s.roundtrips.get(&(ckpt, r.name.clone()));
    html! {
        <div class="codec-compare" data-panel="codec-compare">
            <div class="codec-tools">
                <label title="Compression in the Codecs view uses this codec for this tensor">{ "Codec for this tensor " }
                    <select id="override-select" onchange={on_override}>
                        <option value="" selected={current.is_none()}>{ format!("as the whole file ({})", s.preset().label) }</option>
                        { for tensor_presets().map(|p| html! {
                            <option value={p.id} selected={current.is_some_and(|c| c.id == p.id)}>{ p.label }</option>
                        }) }
                    </select>
                </label>
                <button id="compare-codecs" class="button" disabled={running.is_some()} onclick={on_compare}>
                    { "Compare codecs on this tensor" }</button>
            </div>
            if matches!(r.ty, ElementType::Ggml(_)) {
                <p class="note" data-note="ggml-stored">{ "Timed on the tensor's stored ggml blocks (scales and packed codes as bytes, as a snapshot stores them), not on its dequantized values." }</p>
            }
            if let Some(j) = mine {
                { job_progress(on, j, "Comparing codecs") }
            }
            if let Some(rows) = rows {
                { comparison(rows) }
            }
        </div>
    }
}

fn comparison(rows: &[RoundtripRow]) -> Html {
    let max_enc = rows
        .iter()
        .map(|r| r.result.encode_mbps())
        .fold(1e-9, f64::max);
    let max_dec = rows
        .iter()
        .map(|r| r.result.decode_mbps())
        .fold(1e-9, f64::max);
    let bar = |v: f64, max: f64, class: &str| {
        html! {
            <div class="inline-bar"><div class={classes!("inline-fill", class.to_owned())}
                 style={format!("width:{:.1}%", 100.0 * (v / max).clamp(0.0, 1.0))}></div>
                 <span>{ format!("{v:.0}") }</span></div>
        }
    };
    let hrows: Vec<HBarRow> = rows
        .iter()
        .map(|r| HBarRow {
            label: r.label.clone(),
            value: r.result.ratio.min(1.0),
        })
        .collect();
    html! {
        <div class="comparison">
            <HBarChart id="codec-ratio" title="Compressed size of this tensor (fraction of the original), per codec"
                       rows={Shared::new(hrows)} x_label="compressed / original" color="var(--chart-4)" />
            <table id="codec-comparison">
                <thead><tr><th>{ "codec" }</th><th class="num">{ "ratio" }</th><th class="num">{ "saved" }</th>
                    <th>{ "compress MB/s" }</th><th>{ "decompress MB/s" }</th><th class="num">{ "max rel. error" }</th><th class="num">{ "MSE" }</th></tr></thead>
                <tbody>
                    { for rows.iter().map(|RoundtripRow { label, result: r }| html! {
                        <tr data-label={label.clone()} data-codec={r.codec.clone()} data-ratio={r.ratio.to_string()}
                            data-enc-mbps={format!("{:.2}", r.encode_mbps())} data-dec-mbps={format!("{:.2}", r.decode_mbps())}
                            data-lossy={r.lossy.to_string()} data-max-rel={r.error.map(|e| e.max_rel.to_string())}>
                            <td>{ label }{ if r.lossy { html! { <span class="tag">{ "lossy" }</span> } } else { Html::default() } }</td>
                            <td class="num">{ format!("{:.4}", r.ratio) }</td>
                            <td class="num">{ percent(1.0 - r.ratio) }</td>
                            <td>{ bar(r.encode_mbps(), max_enc, "enc") }</td>
                            <td>{ bar(r.decode_mbps(), max_dec, "dec") }</td>
                            <td class="num">{ r.error.map_or("exact".into(), |e| number(e.max_rel, 3)) }</td>
                            <td class="num">{ r.error.map_or("0".into(), |e| number(e.mse, 3)) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            <p class="note">{ "Each codec compresses and decompresses this tensor in the worker (64 MiB frames for the bitlens codecs, one block for the peers); lossless results are checked byte for byte. Peers are the pure-Rust crates that build for wasm32: lz4_flex, miniz_oxide (deflate) and ruzstd (zstd; it implements only its fastest level), and bg4-lz4, the Hugging Face hub's own storage (Xet: ~64 KiB content-defined chunks, each stored as is, LZ4 or byte-grouped by 4 then LZ4; the same code as bitlens bench)." }</p>
        </div>
    }
}
