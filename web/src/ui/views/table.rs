//! The tensor table: one row per tensor (dtype, shape, params, bytes, byte-group entropy,
//! exponent entropy, predicted ratio, and an "achieved ratio" column filled by the codec panel;
//! after a compression with the auto codec it also names the codec that won each tensor, with its
//! predicted and achieved size).
//! A `.bls` snapshot's table shows its index instead: each tensor's codec, stored bytes, and its
//! ratio (with the lossy error) in the ratio column; the statistics columns fill as tensors are
//! decoded.
//! Sortable by clicking a header, filterable by name; the rows are written as HTML by
//! [`crate::model::table_html`] and parsed into `<tbody>`s of [`ROWS_PER_BODY`] rows by [`rows`].
//! While statistics run only the first rows are drawn, more as the table is scrolled to its end
//! ([`more`]), and all of them once they finish.

mod more;
mod rows;

use crate::model::checkpoint::Checkpoint;
use crate::model::table::{self, SortKey};
use crate::model::table_html::rows_html;
use crate::ui::app::codecs::CompressRun;
use crate::ui::app::{App, Msg};
use more::More;
use rows::Rows;
use web_sys::HtmlInputElement;
use yew::html::Scope;
use yew::prelude::*;

/// Rows rendered at most (the filter narrows larger models).
const MAX_ROWS: usize = 5000;

/// Rows per `<tbody>`: a redraw while statistics arrive writes again only the bodies whose rows
/// changed.
const ROWS_PER_BODY: usize = 64;

/// What the table shows.
pub struct Props<'a> {
    /// The active checkpoint.
    pub checkpoint: Option<&'a Checkpoint>,
    /// Sort and filter.
    pub table: &'a table::View,
    /// Its last compression (the achieved ratio column).
    pub compressed: Option<&'a CompressRun>,
    /// Statistics are being computed (only the first [`table::View::drawn`] rows are drawn).
    pub running: bool,
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
    let drawn = s.table.rows_to_draw(shown, s.running);
    let multi = c.multi_file();
    let run = s.compressed;
    let snapshot = c.snapshot.as_deref();
    let oninput = link.callback(|e: InputEvent| {
        let input: HtmlInputElement = e.target_unchecked_into();
        Msg::Filter(input.value())
    });
    // One listener for every row: the row clicked, by its name.
    let onclick = link.batch_callback(|e: MouseEvent| {
        let target: web_sys::Element = e.target_dyn_into()?;
        let row = target.closest("tbody tr[data-name]").ok()??;
        row.get_attribute("data-name").map(Msg::Detail)
    });
    html! {
        <section class="tensors" data-view="tensors">
            <div class="table-tools">
                <input id="tensor-filter" type="search" placeholder="filter by name…"
                       value={s.table.filter.clone()} {oninput} />
                <span class="count">{ format!("{} of {} tensors", order.len(), c.rows.len()) }
                    if shown < order.len() { { format!(" (first {shown} shown)") } }
                    if drawn < shown { { format!(" · the first {drawn} drawn until the statistics finish") } }
                </span>
            </div>
            <div class="table-scroll" part="table">
            <table id="tensor-table" {onclick}>
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
                { for order[..drawn].chunks(ROWS_PER_BODY).map(|rows| html! {
                    <Rows html={AttrValue::from(rows_html(c, rows, &|name| run?.entry(name)))} />
                }) }
            </table>
            if drawn < shown {
                <More {drawn} total={shown} onvisible={link.callback(|()| Msg::MoreRows)} />
            }
            </div>
        </section>
    }
}
