//! The Values view as the app shows it: the active checkpoint's selected tensor (the largest when
//! none) with the tensor picker, paired for the changes layer with the same tensor in the
//! checkpoint before it (or, for the first, after it) when its type and shape agree.

use super::{Pair, TensorAt, Values};
use crate::model::checkpoint::{Checkpoint, TensorRow};
use crate::ui::app::App;
use crate::ui::jobs::entry_of;
use crate::ui::loader::Source;
use std::collections::HashMap;
use yew::html::Scope;
use yew::prelude::*;

/// The Values view of the active checkpoint's selected tensor (the largest when none), with the
/// tensor picker; the changes layer pairs it with the checkpoint before (or, for the first, after).
pub fn panel(
    link: &Scope<App>,
    checkpoints: &[Checkpoint],
    active: Option<&Checkpoint>,
    detail: Option<&str>,
    sources: &HashMap<u32, Vec<Source>>,
) -> Html {
    let Some(c) = active else {
        return html! { <p>{ "No checkpoint selected." }</p> };
    };
    if c.snapshot.is_some() {
        return html! {
            <p class="note" id="values-snapshot">{ "A weight map reads a checkpoint's own bytes: restore this snapshot (Codecs → Decompress) and open the restored file to map its tensors; Detail shows a decoded tensor's statistics." }</p>
        };
    }
    let Some(row) = c.detail_row(detail).map(|i| &c.rows[i]) else {
        return html! { <p>{ "This checkpoint has no tensors." }</p> };
    };
    let at = |c: &Checkpoint, row: &TensorRow| {
        Some(TensorAt {
            file: sources.get(&c.id)?.get(row.file)?.clone(),
            entry: entry_of(row),
        })
    };
    let Some(tensor) = at(c, row) else {
        return html! { <p class="note">{ "This tensor's file is not readable here." }</p> };
    };
    let i = checkpoints.iter().position(|k| k.id == c.id).unwrap_or(0);
    let other = if i > 0 {
        checkpoints.get(i - 1)
    } else {
        checkpoints.get(1)
    };
    let pair = other.and_then(|o| {
        let r = o.row_by_name(&row.name).map(|j| &o.rows[j])?;
        if r.ty != row.ty || r.shape != row.shape {
            return None;
        }
        let theirs = at(o, r)?;
        let (first, second, a, b) = if i > 0 {
            (theirs, tensor.clone(), &o.name, &c.name)
        } else {
            (tensor.clone(), theirs, &c.name, &o.name)
        };
        Some(Pair {
            first,
            second,
            label: format!("{a} → {b}"),
        })
    });
    html! {
        <div class="values-panel" data-view="values">
            <div class="detail-head">
                <label>{ "Tensor " }{ crate::ui::views::detail::tensor_picker(link, c, &row.name) }</label>
            </div>
            <Values {tensor} {pair} />
        </div>
    }
}
