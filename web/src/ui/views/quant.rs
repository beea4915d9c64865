//! The "Quantization" part of a ggml block-quantized tensor's detail (GGUF `Q4_K`, `Q8_0`, …):
//! its blocks, the bits per code against the codes' entropy and the size that entropy implies,
//! the block scales' range and counts, and histograms of log2 |scale| and of the quant codes
//! (index = code), each with a table as its text alternative. The numbers are
//! [`bitlens_stats::QuantSummary`]'s (what `bitlens inspect --json` reports as `quant`; sizes and
//! bins derived in [`crate::model::quant`]); what scales and codes are per type is
//! [`bitlens_tensors::format::gguf::parts`]'s module doc.

use crate::model::format::{bytes, count, number, percent};
use crate::model::quant::{scale_bins, CodeSizes, ScaleBin};
use crate::ui::charts::{Bar, BarChart};
use crate::ui::shared::Shared;
use bitlens_stats::{QuantSummary, TensorStats};
use bitlens_tensors::format::GgmlType;
use yew::prelude::*;

/// Colour of the scale histogram's bars.
const SCALE_COLOR: &str = "var(--chart-6)";
/// Colour of the code histogram's bars.
const CODE_COLOR: &str = "var(--chart-7)";

/// Bars of the used part of the log2 |scale| histogram.
fn scale_bars(q: &QuantSummary, bins: &[ScaleBin]) -> Vec<Bar> {
    let total = q.scale_hist.iter().sum::<u64>().max(1);
    bins.iter()
        .map(|b| {
            let range = if b.first {
                format!("|scale| < 2^{}", number(b.hi, 3))
            } else if b.last {
                format!("|scale| ≥ 2^{}", number(b.lo, 3))
            } else {
                format!(
                    "|scale| in [2^{}, 2^{}) = [{}, {})",
                    number(b.lo, 3),
                    number(b.hi, 3),
                    number(b.lo.exp2(), 4),
                    number(b.hi.exp2(), 4)
                )
            };
            Bar {
                label: number(b.lo, 3),
                value: b.count as f64,
                color: SCALE_COLOR.into(),
                tip: format!(
                    "{range}: {} scales ({})",
                    count(b.count),
                    percent(b.count as f64 / total as f64)
                ),
            }
        })
        .collect()
}

/// Bars of the code histogram, one per code.
fn code_bars(q: &QuantSummary) -> Vec<Bar> {
    let total = q.code_hist.iter().sum::<u64>().max(1);
    q.code_hist
        .iter()
        .enumerate()
        .map(|(code, &c)| Bar {
            label: code.to_string(),
            value: c as f64,
            color: CODE_COLOR.into(),
            tip: format!(
                "code {code}: {} codes ({})",
                count(c),
                percent(c as f64 / total as f64)
            ),
        })
        .collect()
}

/// A histogram as a table (the text alternative of its chart).
fn table(id: &str, head: [&str; 2], rows: impl Iterator<Item = (String, u64)>) -> Html {
    html! {
        <details class="data-table">
            <summary>{ "As a table" }</summary>
            <table data-table={id.to_owned()}>
                <thead><tr><th>{ head[0] }</th><th class="num">{ head[1] }</th></tr></thead>
                <tbody>
                    { for rows.map(|(k, n)| html! {
                        <tr data-n={n.to_string()}><td>{ k }</td><td class="num">{ count(n) }</td></tr>
                    }) }
                </tbody>
            </table>
        </details>
    }
}

/// A fact with its exact value in `data-v` (for tests and copying) and a rounded one shown.
fn fact(key: &str, label: &str, exact: String, shown: String) -> Html {
    html! {
        <>
            <dt>{ label.to_owned() }</dt>
            <dd data-k={key.to_owned()} data-v={exact}>{ shown }</dd>
        </>
    }
}

/// The Quantization section of a block-quantized tensor of type `ty` (its name).
pub fn section(ty: &str, st: &TensorStats) -> Html {
    let block_elems = GgmlType::from_name(ty).and_then(GgmlType::block_elems);
    let Some(q) = &st.quant else {
        return html! {
            <section class="quant" data-section="quant" data-type={ty.to_owned()}>
                <h3>{ format!("Quantization ({ty})") }</h3>
                <p class="note">{ format!("{ty} codes index a code book (grid) rather than levels; its scales and codes are not summarised. The dequantized values below are its real values.") }</p>
            </section>
        };
    };
    let weights = block_elems.map(|e| q.blocks * u64::from(e));
    let sizes = CodeSizes::of(q, st.bytes);
    let opt = |x: Option<f64>| x.map_or("–".into(), |x| number(x, 4));
    let exact = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let facts = html! {
        <dl class="facts" data-facts="quant">
            { fact("blocks", "blocks", q.blocks.to_string(),
                   format!("{}{}", count(q.blocks), block_elems.map_or(String::new(), |e| format!(" of {e} weights")))) }
            { fact("bits-per-weight", "stored bits per weight",
                   weights.map_or(String::new(), |w| (st.bytes as f64 * 8.0 / w.max(1) as f64).to_string()),
                   weights.map_or("–".into(), |w| number(st.bytes as f64 * 8.0 / w.max(1) as f64, 4))) }
            { fact("code-bits", "bits per code", q.code_bits.to_string(), q.code_bits.to_string()) }
            { fact("code-entropy", "code entropy", q.code_entropy.to_string(),
                   format!("{} bits ({} of {})", number(q.code_entropy, 4), percent(q.code_entropy / f64::from(q.code_bits.max(1))), q.code_bits)) }
            { fact("codes", "codes", sizes.codes.to_string(),
                   format!("{} × {} bits = {}", count(sizes.codes), q.code_bits, bytes(sizes.stored as u64))) }
            { fact("codes-at-entropy", "codes at their entropy", sizes.at_entropy.to_string(), bytes(sizes.at_entropy.round() as u64)) }
            { fact("implied-bytes", "tensor, codes entropy-coded", sizes.implied.to_string(),
                   format!("{} of {} ({})", bytes(sizes.implied.round() as u64), bytes(st.bytes), number(sizes.implied / st.bytes.max(1) as f64, 4))) }
            { fact("scales", "finite scales", q.scales.to_string(), count(q.scales)) }
            { fact("scale-min", "scale min", exact(q.scale_min.map(f64::from)), opt(q.scale_min.map(f64::from))) }
            { fact("scale-max", "scale max", exact(q.scale_max.map(f64::from)), opt(q.scale_max.map(f64::from))) }
            { fact("scale-mean", "scale mean", exact(q.scale_mean), opt(q.scale_mean)) }
            { fact("scale-zero", "zero scales", q.scale_zero.to_string(), count(q.scale_zero)) }
            { fact("scale-negative", "negative scales", q.scale_negative.to_string(), count(q.scale_negative)) }
            { fact("scale-nonfinite", "NaN / ±Inf scales", q.scale_nonfinite.to_string(), count(q.scale_nonfinite)) }
        </dl>
    };
    let bins = scale_bins(q);
    let scale_chart = if bins.is_empty() {
        html! { <p class="note">{ "No non-zero finite scales." }</p> }
    } else {
        html! {
            <div>
                <BarChart id="scale-hist"
                          title={format!("Block scales: log2 |scale| in {} bins per octave ({} non-zero finite scales)",
                              number(1.0 / q.scale_hist_log2_step, 3), count(bins.iter().map(|b| b.count).sum()))}
                          bars={Shared::new(scale_bars(q, &bins))} x_label="log2 |scale| (lower edge of the bin)" y_label="scales" height={240.0} />
                { table("scale-hist", ["log2 |scale| from", "scales"], bins.iter().map(|b| (number(b.lo, 3), b.count))) }
            </div>
        }
    };
    let code_chart = html! {
        <div>
            <BarChart id="code-hist"
                      title={format!("Quant codes ({} bits) — entropy {} bits per code", q.code_bits, number(q.code_entropy, 4))}
                      bars={Shared::new(code_bars(q))} x_label="code (unsigned, as stored)" y_label="codes" height={240.0} />
            { table("code-hist", ["code", "count"], q.code_hist.iter().enumerate().map(|(c, &n)| (c.to_string(), n))) }
        </div>
    };
    html! {
        <section class="quant" data-section="quant" data-type={ty.to_owned()}>
            <h3>{ format!("Quantization ({ty})") }</h3>
            <div class="chart-row value-row">
                { code_chart }
                { facts }
            </div>
            <div class="chart-row">
                { scale_chart }
            </div>
            <p class="note">{ "Scales: the factors a block's codes are multiplied by, as dequantization computes them (d, or d·sc per sub-block for the K-quants); mins are not scales. Codes: the stored integers, unsigned. The implied size keeps every other byte as stored and entropy-codes the codes alone (order 0)." }</p>
        </section>
    }
}
