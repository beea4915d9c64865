//! The tensor table's rows, written as HTML strings ([`crate::model::table_html`]) and parsed by
//! the browser into the table's `<tbody>`s ([`Rows`]). Creating them through the virtual DOM cost
//! one call into the browser per element, attribute and text: 334 ms of the page's thread for a
//! 412-tensor GGUF on two cores, while the workers computed its statistics beside it
//! (BENCHMARKS.md, "Issue 28, 2026-11-28 (second session)"). A row's click reaches the table's one
//! listener (`closest("tr[data-name]")`).

use yew::prelude::*;

/// A `<tbody>` of the tensor table, filled from [`RowsProps::html`] when it changes.
pub struct Rows {
    tbody: web_sys::Element,
}

/// The rows' HTML ([`crate::model::table_html::rows_html`]).
#[derive(Properties, PartialEq)]
pub struct RowsProps {
    /// `<tr>` elements, escaped.
    pub html: AttrValue,
}

impl Component for Rows {
    type Message = ();
    type Properties = RowsProps;

    fn create(ctx: &Context<Self>) -> Self {
        let tbody = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.create_element("tbody").ok())
            .expect("a component renders in a document");
        tbody.set_inner_html(&ctx.props().html);
        Rows { tbody }
    }

    fn changed(&mut self, ctx: &Context<Self>, _old: &RowsProps) -> bool {
        // The same node with new rows: nothing for the virtual DOM to redo.
        self.tbody.set_inner_html(&ctx.props().html);
        false
    }

    fn view(&self, _ctx: &Context<Self>) -> Html {
        Html::VRef(self.tbody.clone().into())
    }
}
