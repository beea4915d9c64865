//! The tensor table: one row per tensor (dtype, shape, params, bytes, byte-group entropy,
//! exponent entropy, predicted ratio, and an "achieved ratio" column filled by the codec panel;
//! after a compression with the auto codec it also names the codec that won each tensor, with its
//! predicted and achieved size).
//! A `.bls` snapshot's table shows its index instead: each tensor's codec, stored bytes, and its
//! ratio (with the lossy error) in the ratio column; the statistics columns fill as tensors are
//! decoded.
//! Sortable by clicking a header, filterable by name. Every row carries its exact numbers in
//! `data-*` attributes (for tests and copy-paste); cells show rounded values.

use crate::model::checkpoint::Checkpoint;
use crate::model::format::{bytes, count, groups, number, shape};
use crate::model::table::{self, SortKey};
use crate::ui::app::codecs::CompressRun;
use crate::ui::app::{App, Msg};
use web_sys::HtmlInputElement;
use yew::html::Scope;
use yew::prelude::*;

/// Rows rendered at most (the filter narrows larger models).
const MAX_ROWS: usize = 5000;

/// What the table shows.
pub struct Props<'a> {
    /// The active checkpoint.
    pub checkpoint: Option<&'a Checkpoint>,
    /// Sort and filter.
    pub table: &'a table::View,
    /// Its last compression (the achieved ratio column).
    pub compressed: Option<&'a CompressRun>,
}

fn header_cell(
    link: &Scope<App>,
    s: &Props,
    key: SortKey,
    label: &str,
    numeric: bool,
    tip: &str,
) -> Html {
    let arrow = if s.table.key == key {
        if s.table.descending {
            " ▼"
        } else {
            " ▲"
        }
    } else {
        ""
    };
    html! {
        <th class={classes!("sortable", numeric.then_some("num"))} title={tip.to_owned()}
            data-sort={format!("{key:?}").to_lowercase()}
            onclick={link.callback(move |_| Msg::Sort(key))}>{ format!("{label}{arrow}") }</th>
    }
}

/// The table of the active checkpoint.
pub fn view(link: &Scope<App>, s: &Props) -> Html {
    let Some(c) = s.checkpoint else {
        return html! { <p>{ "No checkpoint selected." }</p> };
    };
    let order = s.table.apply(&c.rows);
    let shown = order.len().min(MAX_ROWS);
    let multi = c.files.len() > 1;
    let run = s.compressed;
    let snapshot = c.snapshot.as_deref();
    let oninput = link.callback(|e: InputEvent| {
        let input: HtmlInputElement = e.target_unchecked_into();
        Msg::Filter(input.value())
    });
    html! {
        <section class="tensors" data-view="tensors">
            <div class="table-tools">
                <input id="tensor-filter" type="search" placeholder="filter by name…"
                       value={s.table.filter.clone()} {oninput} />
                <span class="count">{ format!("{} of {} tensors", order.len(), c.rows.len()) }
                    if shown < order.len() { { format!(" (first {shown} shown)") } }
                </span>
            </div>
            <div class="table-scroll" part="table">
            <table id="tensor-table">
                <thead>
                    <tr>
                        { header_cell(link, s, SortKey::Order, "#", true, "file order") }
                        { header_cell(link, s, SortKey::Name, "tensor", false, "name") }
                        if multi { <th>{ "file" }</th> }
                        { header_cell(link, s, SortKey::Dtype, "dtype", false, "element type") }
                        <th>{ "shape" }</th>
                        { header_cell(link, s, SortKey::Params, "params", true, "elements") }
                        { header_cell(link, s, SortKey::Bytes, "bytes", true, "bytes of data") }
                        // A snapshot's index first: what a page hosting it shows.
                        if snapshot.is_some() {
                            <th data-col="codec" title="the codec the snapshot stores it with">{ "codec" }</th>
                            <th class="num" data-col="stored" title="bytes of its frames in the snapshot">{ "stored" }</th>
                            <th class="num" title="stored / original bytes in the snapshot; lossy tensors show their max relative error">{ "ratio" }</th>
                        }
                        { header_cell(link, s, SortKey::Entropy, "byte-group entropy", false,
                            "order-0 entropy of each byte group, most significant first, bits/byte; sorts by the entropy of all bytes") }
                        { header_cell(link, s, SortKey::ExponentEntropy, "exp. entropy", true, "entropy of the exponent field, bits") }
                        { header_cell(link, s, SortKey::PredictedRatio, "predicted ratio", true,
                            "64 KiB block-entropy bound / original size (LMC §4.1)") }
                        if snapshot.is_none() {
                            <th class="num" title="compressed / original size of the last compression in the Codecs view; lossy tensors show their max relative error">{ "achieved ratio" }</th>
                        }
                    </tr>
                </thead>
                <tbody>
                    { for order.iter().take(MAX_ROWS).map(|&i| {
                        let r = &c.rows[i];
                        // A snapshot's own index entry, else the last compression's.
                        let achieved = match snapshot {
                            Some(snap) => snap.entry(i),
                            None => run.and_then(|run| run.entry(&r.name)),
                        };
                        let err = achieved.and_then(|e| e.error);
                        // With the auto codec: the candidate that won, and its prediction.
                        let auto = achieved.and_then(|e| e.auto.as_ref());
                        let auto_title = auto.map(|a| {
                            let all: Vec<String> = a.predicted.iter().map(|(c, b)| format!("{c} {b}")).collect();
                            format!("auto chose {}; predicted bytes per candidate (from {} sampled bytes): {}", a.chosen, a.sample_bytes, all.join(", "))
                        });
                        let achieved_title = achieved.map(|e| match err {
                            Some(er) => format!("{}: {} of {} bytes; MSE {}, max relative error {}",
                                e.codec, e.stored_bytes, e.bytes, number(er.mse, 3), number(er.max_rel, 3)),
                            None => format!("{}{}: {} of {} bytes", e.codec, if e.delta { " (XOR delta)" } else { "" }, e.stored_bytes, e.bytes),
                        });
                        let st = r.stats.as_deref();
                        let name = r.name.clone();
                        let onclick = link.callback(move |_| Msg::Detail(name.clone()));
                        let group_json = st.map(|s| serde_json::to_string(&s.byte_group_entropy).unwrap_or_default());
                        let bits_json = st.map(|s| serde_json::to_string(&s.bit_set_ratio).unwrap_or_default());
                        // The values' range (of a ggml block type: of its dequantized values).
                        let values = st.and_then(|s| s.values.as_ref().or_else(|| s.dequantized.as_ref()?.values.as_ref()));
                        let ratio_cell = html! {
                            <td class="num achieved" title={achieved_title}>{ achieved.map_or("–".into(), |e| format!("{:.3}", e.ratio)) }
                                if let Some(er) = err {
                                    <span class="err dim">{ format!(" ±{}", number(er.max_rel, 2)) }</span>
                                }
                                if let (Some(a), Some(e)) = (auto, achieved) {
                                    <span class="auto dim" title={auto_title}>{ format!(" {} · predicted {}, achieved {}",
                                        a.chosen, bytes(a.predicted_bytes), bytes(e.stored_bytes)) }</span>
                                }
                            </td>
                        };
                        html! {
                            <tr class={classes!("row", st.is_none().then_some("pending"))} {onclick}
                                data-name={r.name.clone()} data-dtype={r.type_name()}
                                data-shape={serde_json::to_string(&r.shape).unwrap_or_default()}
                                data-params={r.params.to_string()} data-bytes={r.bytes.to_string()}
                                data-byte-entropy={st.map(|s| s.byte_entropy.to_string())}
                                data-groups={group_json} data-bits={bits_json}
                                data-min={values.and_then(|v| v.min).map(|x| x.to_string())}
                                data-max={values.and_then(|v| v.max).map(|x| x.to_string())}
                                data-exp={st.and_then(|s| s.exponent_entropy).map(|e| e.to_string())}
                                data-pred-ratio={st.map(|s| s.predicted_ratio.to_string())}
                                data-pred-bytes={st.map(|s| s.predicted_bytes.to_string())}
                                data-achieved={achieved.map(|e| e.ratio.to_string())}
                                data-codec={achieved.map(|e| e.codec.clone())}
                                data-stored={achieved.map(|e| e.stored_bytes.to_string())}
                                data-delta={achieved.map(|e| e.delta.to_string())}
                                data-auto-chosen={auto.map(|a| a.chosen.clone())}
                                data-auto-predicted={auto.map(|a| a.predicted_bytes.to_string())}
                                data-mse={err.map(|e| e.mse.to_string())}
                                data-max-abs={err.map(|e| e.max_abs.to_string())}
                                data-mean-rel={err.map(|e| e.mean_rel.to_string())}
                                data-max-rel={err.map(|e| e.max_rel.to_string())}>
                                <td class="num dim">{ i + 1 }</td>
                                <td class="name" title={r.name.clone()}>{ &r.name }</td>
                                if multi { <td class="file dim">{ &c.files[r.file].path }</td> }
                                <td>{ r.type_name() }</td>
                                <td class="shape">{ shape(&r.shape) }</td>
                                <td class="num">{ count(r.params) }</td>
                                <td class="num">{ bytes(r.bytes) }</td>
                                if let (Some(_), Some(e)) = (snapshot, achieved) {
                                    <td class="codec">{ &e.codec }{ if e.delta { " (XOR delta)" } else { "" } }</td>
                                    <td class="num stored">{ bytes(e.stored_bytes) }</td>
                                    { ratio_cell.clone() }
                                }
                                <td class="groups">{ st.map_or("…".into(), |s| groups(&s.byte_group_entropy)) }</td>
                                <td class="num">{ st.map_or("…".into(), |s| s.exponent_entropy.map_or("–".into(), |e| format!("{e:.2}"))) }</td>
                                <td class="num">{ st.map_or("…".into(), |s| format!("{:.3}", s.predicted_ratio)) }</td>
                                if snapshot.is_none() {
                                    { ratio_cell }
                                }
                            </tr>
                        }
                    }) }
                </tbody>
            </table>
            </div>
        </section>
    }
}
