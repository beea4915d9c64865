//! The lossy lesson's BitSnap part (paper 001 §3.4): cluster quantization with K clusters against
//! naive uint8 over the whole tensor — size, MSE, largest error and bound of both, and the
//! histograms of their errors.

use super::super::{claim, js_number};
use super::{choice, error_histogram, head_row, selected, LossyLesson, Msg};
use crate::model::format::{count, number};
use bitlens_lessons::lossy::{self, Measure, Setting, Survey, CLUSTERS};
use yew::prelude::*;

impl LossyLesson {
    /// The part for the chosen cluster count.
    pub(super) fn bitsnap(&self, ctx: &Context<Self>, s: &Survey) -> Html {
        let link = ctx.link();
        let Some(b) = s.find(Setting::Bitsnap {
            clusters: self.clusters,
        }) else {
            return html! {};
        };
        let n = &s.naive;
        let fp32_ratio = 32.0 / b.bits_per_value;
        let measured = html! {
            <span id="bitsnap-claim" data-ratio={js_number(fp32_ratio)} data-mse={js_number(b.errors.mse)}
                  data-naive-mse={js_number(n.errors.mse)}>
                { format!("K = {}: {:.2}× smaller than fp32 ({:.2} bits a value); MSE {} against naive uint8's {} ({}).",
                    self.clusters, fp32_ratio, b.bits_per_value, number(b.errors.mse, 3), number(n.errors.mse, 3),
                    if b.errors.mse < n.errors.mse {
                        format!("{:.1}× lower", n.errors.mse / b.errors.mse.max(f64::MIN_POSITIVE))
                    } else {
                        "not lower".to_string()
                    }) }
            </span>
        };
        let onk = link.batch_callback(|e: Event| selected(&e).map(Msg::Clusters));
        let range = format!(
            "absolute error x̂ − x; the axis spans ± naive uint8's bound {}",
            number(n.bound, 3)
        );
        html! {
            <section class="lossy-part" id="lossy-bitsnap" aria-labelledby="lossy-bitsnap-title">
                <h3 id="lossy-bitsnap-title">{ "BitSnap: K clusters against naive uint8" }</h3>
                <p>{ "Naive uint8 spreads 256 codes evenly between the tensor's minimum and maximum: a few outliers stretch the step for everyone. BitSnap cuts the values into K clusters at the quantiles of a normal distribution (dense near the mean), gives each cluster its own minimum and maximum, and stores a 4-bit cluster label beside each 8-bit code. Either way a value is off by at most half its code step." }</p>
                { claim(
                    "BitSnap §3.4:",
                    "cluster-based uint8 quantization (K = 16 clusters, 4-bit labels) stores fp32 optimizer states in 12 bits a value — 2.67× smaller — with a lower MSE than naive uint8 quantization.",
                    measured,
                ) }
                <p class="muted">{ "BitSnap quantizes fp32 values: the lesson widens the tensor's values to fp32 (exactly) and quantizes those; the errors are against the original values." }</p>
                <div class="controls">
                    { choice("bitsnap-clusters", "Clusters K ", &CLUSTERS, self.clusters, onk, NodeRef::default()) }
                </div>
                <figure class="costs" data-chart="quant-figures">
                    <figcaption><span class="chart-title">{ format!("BitSnap with K = {} against naive uint8, on {} values", self.clusters, count(s.values)) }</span></figcaption>
                    <table id="quant-figures" aria-label="Size and error of BitSnap and naive uint8">
                        { head_row("", &["bytes", "bits / value", "× smaller than fp32", "MSE", "largest error", "guaranteed bound"]) }
                        <tbody>
                            { quant_row("bitsnap", &format!("BitSnap, K = {}", self.clusters), b) }
                            { quant_row("naive", "naive uint8", n) }
                        </tbody>
                    </table>
                    <p class="muted">{ format!("Sizes: BitSnap's encoded stream (the CLI's bitsnap-quant codec, K × 8 bytes of cluster ranges included); naive uint8: one code byte a value plus its minimum and maximum ({} bytes). Bound: half the widest code step plus the rounding into fp32.", lossy::NAIVE_HEADER_BYTES) }</p>
                </figure>
                <div class="lesson-grid">
                    { error_histogram("bitsnap-histogram", &b.errors.histogram, "#2e8b57",
                        &format!("BitSnap error, K = {}: largest {} (bound {}), MSE {}", self.clusters,
                            number(b.errors.max_abs, 3), number(b.bound, 3), number(b.errors.mse, 3)), &range) }
                    { error_histogram("naive-histogram", &n.errors.histogram, "#c0504d",
                        &format!("Naive uint8 error: largest {} (bound {}), MSE {}",
                            number(n.errors.max_abs, 3), number(n.bound, 3), number(n.errors.mse, 3)), &range) }
                </div>
            </section>
        }
    }
}

/// One quantizer's row of the BitSnap table.
fn quant_row(id: &str, what: &str, m: &Measure) -> Html {
    let cells = [
        m.bytes.to_string(),
        format!("{:.3}", m.bits_per_value),
        format!("{:.2}×", 32.0 / m.bits_per_value),
        number(m.errors.mse, 3),
        number(m.errors.max_abs, 3),
        number(m.bound, 3),
    ];
    html! {
        <tr data-quant={id.to_owned()} data-bytes={m.bytes.to_string()} data-mse={js_number(m.errors.mse)}
            data-measured-max={js_number(m.errors.max_abs)} data-bound={js_number(m.bound)}>
            <th scope="row">{ what }</th>
            { for cells.into_iter().map(|c| html! { <td class="num">{ c }</td> }) }
        </tr>
    }
}
