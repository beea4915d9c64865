//! The Values view's readouts: what the pointer is over (the lane's index, its exact value and
//! bits, and the pixel's aggregate over the lanes it covers), and the table of values from a
//! lane the visitor picks. Exact figures sit in `data-*` attributes for tests and scripts.

use super::{Msg, Values};
use crate::model::format::number;
use crate::model::weightmap::Quantity;
use bitlens_stats::weightmap::{Element, Grid};
use web_sys::HtmlInputElement;
use yew::html::Scope;
use yew::prelude::*;

/// Most rows of the table of values.
pub const MAX_ROWS: u64 = 1024;

/// What the pointer is over.
pub struct Hover {
    /// Canvas pixel.
    pub x: u32,
    /// Canvas pixel.
    pub y: u32,
    /// The lane's row in the map's grid.
    pub row: u64,
    /// Its column.
    pub col: u64,
    /// Its index among the tensor's lanes (None past a wrapped vector's end).
    pub lane: Option<u64>,
    /// The lanes the pixel's cells cover (rows a..b, columns c..d) and their aggregate.
    pub cells: Option<((u64, u64, u64, u64), f32)>,
    /// The colour drawn for the pixel.
    pub colour: Option<[u8; 3]>,
    /// The lane read exactly (when the worker answered).
    pub element: Option<Element>,
}

/// A value as the readouts print it: every digit of the f64.
fn exact(v: f64) -> String {
    format!("{v:?}")
}

/// The hover readout (a placeholder line while the pointer is elsewhere, so the layout holds).
pub fn hover(h: Option<&Hover>, q: Quantity) -> Html {
    let Some(h) = h else {
        return html! {
            <p class="values-hover dim" id="values-hover">{ "Point at the map for a value; drag to pan, wheel or + / − to zoom." }</p>
        };
    };
    let (cells, agg) = match h.cells {
        Some(((a, b, c, d), v)) => (format!("{a}..{b} × {c}..{d}"), Some(v)),
        None => (String::new(), None),
    };
    let colour = h
        .colour
        .map(|[r, g, b]| format!("{r},{g},{b}"))
        .unwrap_or_default();
    html! {
        <p class="values-hover" id="values-hover" aria-live="polite"
            data-x={h.x.to_string()} data-y={h.y.to_string()}
            data-row={h.row.to_string()} data-col={h.col.to_string()}
            data-lane={h.lane.map(|l| l.to_string()).unwrap_or_default()}
            data-cells={cells.clone()}
            data-pixel={agg.map(|v| v.to_string()).unwrap_or_default()}
            data-color={colour}
            data-value={h.element.as_ref().map(|e| exact(e.value)).unwrap_or_default()}
            data-hex={h.element.as_ref().map(|e| e.hex.clone()).unwrap_or_default()}>
            <span>{ format!("row {}, column {}", h.row, h.col) }</span>
            if let Some(l) = h.lane {
                <span>{ format!(" · index {l}") }</span>
            }
            if let Some(e) = &h.element {
                <span class="values-exact">{ format!(" · value {} · bits 0x{}", exact(e.value), e.hex) }</span>
            }
            if let Some(v) = agg {
                <span class="dim">{ format!(" · pixel: {} {} over rows × columns {cells}", q.aggregate.label(q.layer), number(f64::from(v), 6)) }</span>
            }
        </p>
    }
}

/// The table of values from lane `start` (`count` rows) with its range inputs.
pub fn table(
    link: &Scope<Values>,
    (start, count): (u64, u64),
    rows: Option<&[Element]>,
    grid: Grid,
) -> Html {
    let on_start = link.callback(move |e: Event| {
        let i: HtmlInputElement = e.target_unchecked_into();
        Msg::Range(i.value().parse().unwrap_or(0), count)
    });
    let on_count = link.callback(move |e: Event| {
        let i: HtmlInputElement = e.target_unchecked_into();
        Msg::Range(start, i.value().parse().unwrap_or(32))
    });
    let position = |i: u64| {
        i.checked_div(grid.cols)
            .map_or_else(String::new, |r| format!("[{r}, {}]", i % grid.cols))
    };
    html! {
        <section class="values-first">
            <h3>{ "Values" }</h3>
            <div class="controls">
                <label class="control">{ "From index " }
                    <input id="values-from" type="number" min="0" max={grid.lanes.saturating_sub(1).to_string()}
                        value={start.to_string()} onchange={on_start} />
                </label>
                <label class="control">{ "Count " }
                    <input id="values-count" type="number" min="1" max={MAX_ROWS.to_string()}
                        value={count.to_string()} onchange={on_count} />
                </label>
            </div>
            { match rows {
                None => html! { <p class="note">{ "Reading…" }</p> },
                Some([]) => html! { <p class="note">{ "No values there." }</p> },
                Some(rows) => html! {
                    <div class="table-scroll">
                        <table class="values-table" id="values-table">
                            <thead><tr><th>{ "index" }</th><th>{ "row, column" }</th><th>{ "value" }</th><th>{ "bits (hex)" }</th></tr></thead>
                            <tbody>
                                { for rows.iter().map(|e| html! {
                                    <tr data-index={e.index.to_string()} data-value={exact(e.value)} data-hex={e.hex.clone()}>
                                        <td class="num">{ e.index }</td>
                                        <td class="num">{ position(e.index) }</td>
                                        <td class="num">{ exact(e.value) }</td>
                                        <td class="mono">{ format!("0x{}", e.hex) }</td>
                                    </tr>
                                }) }
                            </tbody>
                        </table>
                    </div>
                },
            } }
        </section>
    }
}
