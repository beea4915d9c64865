//! The lossy lesson's NeuZip part (paper 003 §2.3): k ∈ {0, 1, 3} mantissa bits kept after a
//! normalization by blocks of B values — the paper's bound 2^-k and this encoder's tighter one
//! beside the measured errors, their histogram and the encoded size.

use super::super::{claim, js_number};
use super::{choice, error_histogram, selected, LossyLesson, Msg};
use crate::model::format::{bytes, count, number};
use bitlens_lessons::lossy::{Measure, Setting, Survey, NEUZIP_BITS, NEUZIP_BLOCKS};
use yew::prelude::*;

impl LossyLesson {
    /// The part for the chosen k and block.
    pub(super) fn neuzip(&self, ctx: &Context<Self>, s: &Survey, dtype: &str) -> Html {
        let link = ctx.link();
        let setting = Setting::Neuzip {
            k: self.k,
            block: self.block,
        };
        let Some(m) = s.find(setting) else {
            return html! {};
        };
        let e = &m.errors;
        let width_bits = 8.0
            * self
                .chosen
                .source(&ctx.props().tensors)
                .map_or(2.0, |t| t.width() as f64);
        let share = m.bits_per_value / width_bits;
        let measured = html! {
            <span id="neuzip-claim" data-measured-max={js_number(m.measured_max())} data-bound={js_number(m.bound)}>
                { format!("k = {}, blocks of {}: the largest relative error is {} — within the bound 2^-{} = {}; the stream takes {:.2} bits a value, {:.1} % of the {dtype} size.",
                    self.k, self.block, number(e.max_rel, 4), self.k, number(m.bound, 4),
                    m.bits_per_value, 100.0 * share) }
            </span>
        };
        let onk = link.batch_callback(|e: Event| selected(&e).map(Msg::K));
        let onblock = link.batch_callback(|e: Event| selected(&e).map(Msg::Block));
        html! {
            <section class="lossy-part" id="lossy-neuzip" aria-labelledby="lossy-neuzip-title">
                <h3 id="lossy-neuzip-title">{ "NeuZip: keep k mantissa bits" }</h3>
                <p>{ "NeuZip codes the exponents losslessly (see the rANS lesson) and, for inference, rounds each mantissa to its k most significant bits. Before rounding, each block of B weights is divided by the significand of its largest weight, stored in one byte per block, so that weight comes back exact." }</p>
                { claim(
                    "NeuZip §2.3:",
                    "keeping the k most significant mantissa bits changes each weight by at most 2^-k of itself (k = 0, 1 or 3, so the fields fill whole bytes); with 3 bits models stay nearly lossless in under half the memory.",
                    measured,
                ) }
                <div class="controls">
                    { choice("neuzip-k", "Mantissa bits k ", &NEUZIP_BITS, self.k, onk, NodeRef::default()) }
                    { choice("neuzip-block", "Normalization block (values) ", &NEUZIP_BLOCKS, self.block, onblock, self.block_select.clone()) }
                    <span class="muted">{ "← / → change the block size" }</span>
                </div>
                <div class="lesson-grid">
                    { figures_table("neuzip-figures", m, &[
                        ("bound", format!("guaranteed: 2^-{} (the paper)", self.k), m.bound),
                        ("tight-bound", "this encoder: 2^-(k+1) + the format's rounding".into(), m.tight_bound),
                        ("max-rel", "measured: largest relative error".into(), e.max_rel),
                        ("max-abs", "measured: largest absolute error".into(), e.max_abs),
                        ("rms", "measured: RMS error".into(), e.rms),
                    ]) }
                    { error_histogram("neuzip-histogram", &e.histogram, "var(--accent, #3b6fd8)",
                        &format!("Relative error of {} non-zero values, k = {}, blocks of {}: largest {} of the bound {}",
                            count(e.histogram.counts.iter().sum()), self.k, self.block, number(e.max_rel, 3), number(m.bound, 3)),
                        "relative error (x̂ − x) / x; the axis spans ± the bound 2^-k") }
                </div>
            </section>
        }
    }
}

/// A measure's figures: one row per `(id, what, value)`, and its size.
fn figures_table(id: &str, m: &Measure, rows: &[(&str, String, f64)]) -> Html {
    html! {
        <figure class="costs" data-chart={id.to_owned()}>
            <table id={id.to_owned()} aria-label="Bound, measured error and size"
                   data-measured-max={js_number(m.measured_max())} data-bound={js_number(m.bound)}
                   data-tight-bound={js_number(m.tight_bound)} data-bytes={m.bytes.to_string()}
                   data-mse={js_number(m.errors.mse)} data-values={m.errors.values.to_string()}>
                <tbody>
                    { for rows.iter().map(|(row, what, v)| html! {
                        <tr data-figure={row.to_string()} data-value={js_number(*v)}>
                            <th scope="row">{ what.clone() }</th><td class="num">{ number(*v, 4) }</td>
                        </tr>
                    }) }
                    <tr data-figure="size">
                        <th scope="row">{ "encoded size" }</th>
                        <td class="num">{ format!("{} ({:.2} bits a value)", bytes(m.bytes), m.bits_per_value) }</td>
                    </tr>
                </tbody>
            </table>
        </figure>
    }
}
