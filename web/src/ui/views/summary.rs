//! Whole-checkpoint summary: files, tensors, parameters, bytes, element-type mix, whole-model byte
//! entropy, the predicted compressed size (64 KiB block-entropy bound, LMC §4.1), and per dtype the
//! bit-position set ratios and byte-group entropies — each ggml block type (`Q4_K`, `Q8_0`, …) as
//! a group of its own, its stored bytes' bits and the entropy of all its quant codes
//! ([`bitlens_stats::Summary::by_dtype`]). A snapshot adds its sizes and bytes per codec
//! ([`crate::ui::views::snapshot::summary`]).

use crate::model::checkpoint::{meta_text, Checkpoint};
use crate::model::format::{bytes, count, groups, number, percent};
use crate::ui::charts::{Bar, BarChart};
use crate::ui::shared::Shared;
use crate::ui::views::bitcharts::{bit_bars, role_legend};
use bitlens_stats::DtypeSummary;
use yew::prelude::*;

fn card(label: &str, value: String, id: &str) -> Html {
    html! {
        <div class="card" data-card={id.to_owned()}>
            <div class="card-label">{ label }</div>
            <div class="card-value">{ value }</div>
        </div>
    }
}

/// The summary of the active checkpoint.
pub fn view(checkpoint: Option<&Checkpoint>) -> Html {
    let Some(c) = checkpoint else {
        return html! { <p>{ "No checkpoint selected." }</p> };
    };
    let sum = &c.summary;
    let partial =
        (!c.complete()).then(|| format!(" (over {} of {} tensors so far)", c.done, c.rows.len()));
    let mix = c.dtype_mix();
    let mix_text: Vec<String> = mix
        .iter()
        .map(|m| {
            format!(
                "{} {}",
                m.name,
                percent(m.bytes as f64 / c.data_bytes().max(1) as f64)
            )
        })
        .collect();
    let mix_bars = Shared::new(
        mix.iter()
            .map(|m| Bar {
                label: m.name.clone(),
                value: m.bytes as f64 / 1e6,
                color: "var(--chart-1)".into(),
                tip: format!(
                    "{}: {} tensors, {} params, {}",
                    m.name,
                    m.tensors,
                    count(m.params),
                    bytes(m.bytes)
                ),
            })
            .collect::<Vec<_>>(),
    );
    let stats_ready = c.done > 0;
    html! {
        <section class="summary" data-view="summary">
            <h2>{ &c.name }</h2>
            <div class="cards" part="cards">
                { card("Files", c.files.len().to_string(), "files") }
                { card("Tensors", c.rows.len().to_string(), "tensors") }
                { card("Parameters", count(c.params()), "params") }
                { card("Size on disk", bytes(c.file_bytes()), "bytes") }
                { card("Element types (by bytes)", mix_text.join(", "), "dtypes") }
                { card("Byte entropy (whole model)",
                       if stats_ready { format!("{:.3} bits/byte{}", sum.byte_entropy, partial.clone().unwrap_or_default()) } else { "computing…".into() },
                       "entropy") }
                { card("Predicted compressed size",
                       if stats_ready { format!("{} ({} of the data){}", bytes(sum.predicted_bytes), percent(sum.predicted_ratio), partial.clone().unwrap_or_default()) } else { "computing…".into() },
                       "predicted") }
            </div>
            if let Some(snap) = c.snapshot.as_deref() {
                { crate::ui::views::snapshot::summary(c, snap) }
            }
            <p class="note">{ "Predicted size: the order-0 entropy of each 64 KiB block of each byte group (LMC §4.1), i.e. what a block-adaptive entropy coder over byte-grouped data can reach." }</p>
            <h3>{ "Files" }</h3>
            <table class="files">
                <thead><tr><th>{ "file" }</th><th class="num">{ "size" }</th><th class="num">{ "tensors" }</th><th class="num">{ "header" }</th></tr></thead>
                <tbody>
                    { for c.files.iter().map(|f| html! {
                        <tr>
                            <td>{ &f.path }</td>
                            <td class="num">{ bytes(f.layout.file_size) }</td>
                            <td class="num">{ f.layout.entries.len() }</td>
                            <td class="num">{ bytes(f.header_bytes()) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            { for c.files.iter().filter(|f| f.header.is_none()).map(|f| html! {
                <>
                    <h3>{ format!("{} ({})", f.path, f.layout.kind) }</h3>
                    <table class="metadata" data-file={f.path.clone()} data-kind={f.layout.kind.clone()}>
                        <thead><tr><th>{ "key" }</th><th>{ "value" }</th></tr></thead>
                        <tbody>
                            { for f.layout.metadata.iter().map(|(k, v)| html! {
                                <tr data-key={k.clone()}><td>{ k }</td><td class="meta">{ meta_text(v) }</td></tr>
                            }) }
                        </tbody>
                    </table>
                </>
            }) }
            <div class="charts">
                <BarChart id="dtype-mix" title="Bytes per element type" bars={mix_bars}
                          x_label="element type (dtype or ggml block type)" y_label="size (MB)" height={220.0} />
                { for sum.by_dtype.iter().map(group_chart) }
            </div>
        </section>
    }
}

/// The bit chart of one group of the summary: a dtype's values, or a ggml block type's stored
/// bytes (with the entropy of all its quant codes).
fn group_chart(d: &DtypeSummary) -> Html {
    let (bars, bands) = bit_bars(d.dtype, &d.bit_set_ratio, "set in");
    let name = d.type_name();
    let title = match &d.element_type {
        None => format!(
            "{name}: fraction of values with each bit set ({} tensors; byte-group entropy msb→lsb {} bits/byte; exponent entropy {})",
            d.tensors,
            groups(&d.byte_group_entropy),
            d.exponent_entropy
                .map_or("–".into(), |e| format!("{} bits", number(e, 3)))
        ),
        Some(_) => format!(
            "{name}: fraction of stored block bytes with each bit set ({} tensors, {}; byte entropy {} bits/byte; quant codes {})",
            d.tensors,
            bytes(d.bytes),
            groups(&d.byte_group_entropy),
            match (d.code_entropy, d.code_bits) {
                (Some(h), Some(b)) => format!("entropy {} bits of {b}", number(h, 4)),
                _ => "not summarised".into(),
            }
        ),
    };
    html! {
        <div class="dtype-block" data-group={name.clone()} data-tensors={d.tensors.to_string()}
             data-bytes={d.bytes.to_string()} data-code-entropy={d.code_entropy.map(|e| e.to_string())}>
            <BarChart id={format!("model-bits-{name}")} {title}
                      bars={Shared::new(bars)} bands={Some(Shared::new(bands))}
                      x_label="bit position (most significant → least significant)"
                      y_label="fraction set" y_max={Some(1.0)} legend={role_legend(d.dtype)} />
        </div>
    }
}
