//! Compare: checkpoints side by side, step by step (`#1 → #2`, `#2 → #3`, …). For the selected
//! step: the whole-model flip ratio per bit position (per dtype), a heatmap of tensors × bit
//! positions, the changed fraction per tensor; over all steps: the flip ratio of each bit position
//! per step (LMC Fig. 6). For ggml block-quantized tensors (GGUF) the flips are of the stored
//! blocks; a table adds how their dequantized values changed (`bitlens diff`'s `dequantized`).

use crate::model::checkpoint::Checkpoint;
use crate::model::compare::Comparison;
use crate::model::format::{bytes, count, number, percent};
use crate::ui::app::{App, Msg};
use crate::ui::charts::{BarChart, HBarChart, HBarRow, Heatmap, LineChart, Series};
use crate::ui::shared::Shared;
use crate::ui::views::bitcharts::{bit_bars, bit_color, role_legend};
use bitlens_tensors::Dtype;
use yew::html::Scope;
use yew::prelude::*;

/// What the compare view shows.
pub struct Props<'a> {
    /// Loaded checkpoints, in compare order.
    pub checkpoints: &'a [Checkpoint],
    /// Consecutive checkpoints compared.
    pub comparisons: &'a [Comparison],
    /// The comparison shown.
    pub step: usize,
}

impl Props<'_> {
    /// A checkpoint by id.
    pub fn checkpoint(&self, id: u32) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.id == id)
    }
}

fn step_name(s: &Props, cmp: &Comparison) -> String {
    let pos = |id: u32| {
        s.checkpoints
            .iter()
            .position(|c| c.id == id)
            .map_or(0, |p| p + 1)
    };
    format!("#{} → #{}", pos(cmp.a), pos(cmp.b))
}

fn heatmap_for(cmp: &Comparison, dtype: Dtype) -> Html {
    let pairs: Vec<_> = cmp
        .pairs
        .iter()
        .filter(|p| p.dtype == dtype && p.flips.is_some())
        .collect();
    if pairs.is_empty() {
        return Html::default();
    }
    if pairs
        .iter()
        .all(|p| p.flips.as_ref().is_some_and(|f| f.changed_lanes == 0))
    {
        return html! { <p class="note">{ format!("{dtype}: no bit flipped in any of the {} tensors.", pairs.len()) }</p> };
    }
    let bits = pairs[0]
        .flips
        .as_ref()
        .map_or(0, |f| f.bit_flip_ratio.len());
    let rows: Vec<String> = pairs.iter().map(|p| p.name.clone()).collect();
    let cols: Vec<String> = (0..bits).rev().map(|b| b.to_string()).collect();
    let values: Vec<Vec<Option<f64>>> = pairs
        .iter()
        .map(|p| {
            let r = &p.flips.as_ref().expect("filtered").bit_flip_ratio;
            (0..bits).rev().map(|b| r.get(b).copied()).collect()
        })
        .collect();
    let (_, bands) = bit_bars(dtype, &vec![0.0; bits], "");
    html! {
        <Heatmap id={format!("flip-heatmap-{dtype}")}
                 title={format!("{dtype}: flip ratio per tensor and bit position ({} tensors)", rows.len())}
                 rows={Shared::new(rows)} cols={Shared::new(cols)} values={Shared::new(values)}
                 bands={Some(Shared::new(bands))}
                 x_label="bit position (most significant → least significant)" value_label="flipped" />
    }
}

/// The dequantized differences of the quantized tensors of `cmp` (absent when there is none).
fn dequantized_table(s: &Props, cmp: &Comparison) -> Html {
    let a = s.checkpoint(cmp.a);
    let rows: Vec<_> = cmp
        .pairs
        .iter()
        .filter_map(|p| p.dequantized.as_ref().map(|d| (p, d)))
        .collect();
    if rows.is_empty() {
        return Html::default();
    }
    let type_of = |row: usize| {
        a.and_then(|c| c.rows.get(row))
            .map_or_else(String::new, |r| match r.ty {
                bitlens_tensors::format::ElementType::Ggml(g) => {
                    g.name().unwrap_or("ggml").to_owned()
                }
                bitlens_tensors::format::ElementType::Dtype(d) => d.to_string(),
            })
    };
    html! {
        <div class="dequantized-diff">
            <h3>{ "Quantized tensors: how the dequantized values changed" }</h3>
            <table id="dequantized-diff">
                <thead><tr><th>{ "tensor" }</th><th>{ "type" }</th><th class="num">{ "values" }</th>
                    <th class="num">{ "changed" }</th><th class="num">{ "max |Δ|" }</th>
                    <th class="num">{ "mean |Δ|" }</th><th class="num">{ "relative L2" }</th></tr></thead>
                <tbody>
                    { for rows.iter().map(|(p, d)| html! {
                        <tr data-name={p.name.clone()} data-values={d.values.to_string()} data-changed={d.changed.to_string()}
                            data-changed-fraction={d.changed_fraction.to_string()} data-max-abs={d.max_abs_diff.to_string()}
                            data-mean-abs={d.mean_abs_diff.to_string()}
                            data-rel-l2={d.relative_l2.map(|r| r.to_string())}>
                            <td>{ p.name.clone() }</td>
                            <td>{ type_of(p.a_row) }</td>
                            <td class="num">{ count(d.values) }</td>
                            <td class="num">{ percent(d.changed_fraction) }</td>
                            <td class="num">{ number(d.max_abs_diff, 3) }</td>
                            <td class="num">{ number(d.mean_abs_diff, 3) }</td>
                            <td class="num">{ d.relative_l2.map_or("n/a (A is zero)".into(), |r| number(r, 3)) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            <p class="note">{ "The bit flips above are of the stored blocks (scales and packed codes as bytes); this table compares the values the blocks dequantize to (llama.cpp's reference kernels, as gguf-py's dequantize): the fraction that changed, the largest and mean absolute difference and ‖B − A‖ / ‖A‖, over the values finite on both sides." }</p>
        </div>
    }
}

fn over_steps(s: &Props) -> Html {
    if s.comparisons.len() < 2 {
        return html! {
            <p class="note">{ "Load three or more checkpoints of one run to see the flip ratio of each bit position over the steps (LMC Fig. 6)." }</p>
        };
    }
    // The dtype with most compared bytes in the first step.
    let Some(d) = s.comparisons[0]
        .summary
        .by_dtype
        .iter()
        .max_by_key(|d| d.lanes)
        .map(|d| d.dtype)
    else {
        return html! { <p class="note">{ "Flip ratios over steps appear when the comparisons are done." }</p> };
    };
    let names: Vec<String> = s.comparisons.iter().map(|c| step_name(s, c)).collect();
    let per_step: Vec<Option<Vec<f64>>> = s
        .comparisons
        .iter()
        .map(|c| {
            c.summary
                .by_dtype
                .iter()
                .find(|x| x.dtype == d)
                .map(|x| x.bit_flip_ratio.clone())
        })
        .collect();
    let bits = per_step
        .iter()
        .flatten()
        .map(|r| r.len())
        .max()
        .unwrap_or(0);
    let series: Vec<Series> = (0..bits)
        .rev()
        .map(|b| Series {
            name: format!("bit {b}"),
            color: bit_color(d, b),
            points: per_step
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_ref().and_then(|r| r.get(b)).map(|&v| (i as f64, v)))
                .collect(),
        })
        .collect();
    html! {
        <LineChart id="flips-over-steps"
                   title={format!("{d}: flip ratio of each bit position from step to step (whole model; 0 is drawn at 1e-7)")}
                   series={Shared::new(series)} x_names={Some(Shared::new(names))}
                   x_label="step (checkpoint → next checkpoint)" y_label="fraction flipped"
                   log_y=true log_floor={1e-7} height={320.0} />
    }
}

/// The compare view.
pub fn view(link: &Scope<App>, s: &Props) -> Html {
    if s.comparisons.is_empty() {
        return html! { <p class="note">{ "Load two or more checkpoints of the same model to compare them." }</p> };
    }
    let step = s.step.min(s.comparisons.len() - 1);
    let cmp = &s.comparisons[step];
    let name = |id: u32| s.checkpoint(id).map_or("?".to_owned(), |c| c.name.clone());
    let sum = &cmp.summary;
    let selector = html! {
        <div class="steps">
            { for s.comparisons.iter().enumerate().map(|(i, c)| html! {
                <button class={classes!("step-button", (i == step).then_some("current"))} data-step={i.to_string()}
                        onclick={link.callback(move |_| Msg::Step(i))}>
                    { format!("{}  {} → {}", step_name(s, c), name(c.a), name(c.b)) }
                </button>
            }) }
        </div>
    };
    let progress = (!cmp.complete()).then(|| html! {
        <p class="note pending">{ format!("Comparing… {} of {} tensors done.", cmp.done, cmp.pairs.len()) }</p>
    });
    let changed: Vec<HBarRow> = cmp
        .pairs
        .iter()
        .filter_map(|p| {
            p.flips.as_ref().map(|f| HBarRow {
                label: p.name.clone(),
                value: f.changed_fraction,
            })
        })
        .collect();
    let extras = html! {
        <>
            if !cmp.mismatched.is_empty() {
                <details class="mismatch"><summary>{ format!("{} tensors differ in dtype or shape (not compared)", cmp.mismatched.len()) }</summary>
                    <ul>{ for cmp.mismatched.iter().map(|m| html! { <li>{ format!("{}: {} vs {}", m.name, m.a, m.b) }</li> }) }</ul>
                </details>
            }
            if !cmp.only_in_a.is_empty() || !cmp.only_in_b.is_empty() {
                <details class="only"><summary>{ format!("{} tensors only in {}, {} only in {}", cmp.only_in_a.len(), name(cmp.a), cmp.only_in_b.len(), name(cmp.b)) }</summary>
                    <ul>
                        { for cmp.only_in_a.iter().map(|n| html! { <li>{ format!("only in {}: {n}", name(cmp.a)) }</li> }) }
                        { for cmp.only_in_b.iter().map(|n| html! { <li>{ format!("only in {}: {n}", name(cmp.b)) }</li> }) }
                    </ul>
                </details>
            }
        </>
    };
    html! {
        <section class="compare" data-view="compare" data-step={step.to_string()}>
            { selector }
            { progress.unwrap_or_default() }
            <div class="cards" part="cards">
                <div class="card" data-card="compared"><div class="card-label">{ "Tensors compared" }</div>
                    <div class="card-value">{ format!("{} of {}", sum.tensors, cmp.pairs.len()) }</div></div>
                <div class="card" data-card="changed"><div class="card-label">{ "Values changed" }</div>
                    <div class="card-value" data-changed-fraction={sum.changed_fraction.to_string()}>
                        { format!("{} ({} of {})", percent(sum.changed_fraction), count(sum.changed_lanes), count(sum.lanes)) }</div></div>
                <div class="card" data-card="delta"><div class="card-label">{ "XOR delta, predicted size" }</div>
                    <div class="card-value">{ format!("{} of {}", bytes(sum.delta_predicted_bytes), bytes(sum.bytes)) }</div></div>
            </div>
            { extras }
            { for sum.by_dtype.iter().filter(|d| d.changed_lanes > 0).map(|d| {
                let (bars, bands) = bit_bars(d.dtype, &d.bit_flip_ratio, "flipped in");
                html! {
                    <BarChart id={format!("model-flips-{}", d.dtype)}
                              title={format!("{}: fraction of values whose bit flipped, whole model ({} tensors, {} changed)",
                                  d.dtype, d.tensors, percent(d.changed_fraction))}
                              bars={Shared::new(bars)} bands={Some(Shared::new(bands))}
                              x_label="bit position (most significant → least significant)" y_label="fraction flipped"
                              legend={role_legend(d.dtype)} />
                }
            }) }
            { over_steps(s) }
            { for sum.by_dtype.iter().map(|d| heatmap_for(cmp, d.dtype)) }
            { dequantized_table(s, cmp) }
            if !changed.is_empty() {
                <HBarChart id="changed-fraction" title="Fraction of values changed, per tensor"
                           rows={Shared::new(changed)} x_label="values changed (fraction of the tensor's elements)" color="var(--chart-5)" />
            }
        </section>
    }
}
