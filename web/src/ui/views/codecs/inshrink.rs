//! The Inshrinkerator parts of the Codecs view (paper 002): the error budget control (the
//! model-free proxy, named as such), and an Inshrinkerator snapshot's plan — the configuration
//! per layer group (bins, prune, protect, metric, or the exact fallback), how the search found it,
//! the achieved relative L2 error per group and per tensor (largest first) — read from the
//! [`InshrinkInfo`] the worker returns, the document `bitlens inspect --json` prints.

use crate::model::codec::{by_error, InshrinkInfo};
use crate::model::format::number;
use crate::ui::app::codecs::CodecMsg;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The error budget input.
pub fn budget_input(on: &Callback<CodecMsg>, max_error: f64) -> Html {
    let on_input = on.reform(|e: Event| {
        let input: HtmlInputElement = e.target_unchecked_into();
        CodecMsg::SetMaxError(input.value().trim().parse().ok())
    });
    html! {
        <label title="Model-free proxy for the loss: every float tensor's relative L2 error ‖w − ŵ‖ / ‖w‖ stays at most this (the CLI's --max-error)">
            { "Error budget (relative L2 per tensor, model-free proxy) " }
            <input id="max-error" type="number" min="0" step="0.01" value={max_error.to_string()}
                   onchange={on_input} />
        </label>
    }
}

/// What the preset does, in a note.
pub fn about() -> Html {
    html! {
        <p class="note" id="inshrink-about">{ "Inshrinkerator (paper 002) reads every float tensor whole into the worker, ranks its values by magnitude, prunes, protects and quantizes them with non-uniform bins, and searches one configuration for the embeddings and one for all other layers (bins 4–32, prune 0–50 %, protect 0.05–1 %), keeping the smallest snapshot whose every tensor meets the error budget. A per-tensor budget is stricter than the paper's loss threshold (32 bins leave about 5 % error on Gaussian-like matrices), so a tensor that misses it at its group's setting gets more bins on its own, up to 253 (codes still one byte), or is stored lossless; a tensor is never stored larger than LMC stores it. The budget is a model-free proxy, not the model's loss: the CLI also takes your own evaluation (--eval-cmd, --max-degradation), optimizer state for sensitivity ranking (--optimizer) and chains of deltas against the previous snapshot (--base PREV.bls). Other tensors are stored with LMC, losslessly. The snapshot is what bitlens compress --codec inshrink writes, and bitlens decompress restores it." }</p>
    }
}

/// The tensors the budget moved off their group's setting (more bins, or lossless), and why.
fn own_settings(i: &InshrinkInfo) -> Html {
    let own = i.report.as_ref().map_or(&[][..], |r| &r.own_settings[..]);
    if own.is_empty() {
        return Html::default();
    }
    let lossless = own.iter().filter(|o| o.setting.exact).count();
    html! {
        <>
        <p class="note" id="inshrink-own" data-more-bins={(own.len() - lossless).to_string()}
           data-lossless={lossless.to_string()}>
            { format!("The budget forced {} tensors off their group's setting: {} got more bins on their own, {} were stored lossless (LMC).",
                own.len(), own.len() - lossless, lossless) }
        </p>
        <div class="table-scroll">
        <table class="inshrink-own">
            <thead><tr><th>{ "tensor" }</th><th>{ "setting" }</th><th class="num">{ "relative L2 error" }</th><th>{ "why" }</th></tr></thead>
            <tbody>
                { for own.iter().map(|o| html! {
                    <tr data-name={o.name.clone()} data-exact={o.setting.exact.to_string()}>
                        <td class="name">{ &o.name }</td><td>{ o.setting.to_string() }</td>
                        <td class="num">{ number(o.error, 4) }</td><td>{ &o.reason }</td>
                    </tr>
                }) }
            </tbody>
        </table>
        </div>
        </>
    }
}

/// The plan and achieved errors of an Inshrinkerator snapshot.
pub fn plan(i: &InshrinkInfo) -> Html {
    let quality = i.quality.as_ref();
    let rows = by_error(i);
    html! {
        <div class="inshrink-plan" data-protect-dtype={i.protect_dtype.clone()}
             data-quality={quality.map(|q| q.kind.clone())}
             data-max-error={quality.and_then(|q| q.max_error).map(|e| e.to_string())}
             data-base={i.base.as_ref().map(|b| b.name.clone())}>
            <h3>{ "Inshrinkerator plan" }</h3>
            <p class="note">{ format!("Quality threshold: {}{}; protected values stored as {}.",
                quality.map_or("not recorded".to_owned(), |q| q.name.clone()),
                if quality.is_some_and(|q| q.kind == "l2-proxy") { " (model-free proxy)" } else { "" },
                i.protect_dtype) }
                if let Some(b) = &i.base {
                    { format!(" A delta of a chain against {} (index {}): restore it with bitlens decompress next to its base.", b.name, b.index_checksum) }
                }
            </p>
            <div class="table-scroll">
            <table class="inshrink-groups">
                <thead><tr><th>{ "layer group" }</th><th>{ "configuration" }</th><th class="num">{ "bins" }</th>
                    <th class="num">{ "prune" }</th><th>{ "metric" }</th><th class="num">{ "protect" }</th>
                    <th>{ "search" }</th><th class="num">{ "largest error" }</th></tr></thead>
                <tbody>
                    { for i.groups.iter().map(|g| {
                        let s = &g.setting;
                        let search = g.search.as_ref();
                        let fallback = search.is_some_and(|x| x.exact_fallback);
                        html! {
                            <tr data-group={g.group.clone()} data-exact={s.exact.to_string()}
                                data-bins={s.bins.map(|b| b.to_string())} data-prune={s.prune.map(|p| p.to_string())}
                                data-protect={s.protect.map(|p| p.to_string())} data-metric={s.metric.clone()}
                                data-fallback={fallback.to_string()} data-max-error={g.max_error.to_string()}>
                                <td>{ &g.group }</td>
                                <td>{ if fallback { "exact (fallback: no configuration met the budget for the whole group; tensors below may have their own)".to_owned() } else { s.to_string() } }</td>
                                <td class="num">{ s.bins.map_or("—".into(), |b| b.to_string()) }</td>
                                <td class="num">{ s.prune.map_or("—".into(), |p| format!("{:.1} %", f64::from(p) * 100.0)) }</td>
                                <td>{ s.metric.clone().unwrap_or_else(|| "—".into()) }</td>
                                <td class="num">{ s.protect.map_or("—".into(), |p| format!("{:.2} %", f64::from(p) * 100.0)) }</td>
                                <td>{ search.map_or("—".to_owned(), |x| format!("{}, {} trials", x.mode, x.trials)) }</td>
                                <td class="num">{ number(g.max_error, 4) }</td>
                            </tr>
                        }
                    }) }
                </tbody>
            </table>
            </div>
            { own_settings(i) }
            if rows.is_empty() {
                <p class="note">{ "Per-tensor errors are in the tensors' streams, which are not fetched for a snapshot on a server; the group errors are the search's." }</p>
            } else {
            <h3>{ "Achieved error per tensor (largest first)" }</h3>
            <div class="table-scroll">
            <table class="inshrink-tensors">
                <thead><tr><th>{ "tensor" }</th><th>{ "layer" }</th><th>{ "group" }</th><th>{ "setting" }</th>
                    <th class="num">{ "protected" }</th><th class="num">{ "relative L2 error" }</th></tr></thead>
                <tbody>
                    { for rows.iter().map(|(name, t)| html! {
                        <tr data-name={name.to_string()} data-error={t.error.to_string()} data-group={t.group.clone()}
                            data-exact={t.setting.exact.to_string()} data-protected={t.protected.to_string()}>
                            <td class="name">{ *name }</td><td>{ &t.layer }</td><td>{ &t.group }</td>
                            <td>{ t.setting.to_string() }</td>
                            <td class="num">{ t.protected.to_string() }</td>
                            <td class="num">{ number(f64::from(t.error), 4) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            </div>
            }
        </div>
    }
}
