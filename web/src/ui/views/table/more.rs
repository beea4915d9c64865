//! The line under the tensor table while statistics run and only its first rows are drawn
//! ([`crate::model::table::View::drawn`]): it says how many are, and asks for more
//! ([`MoreProps::onvisible`]) whenever it comes into view, so scrolling the table to its end
//! draws the next rows. An `IntersectionObserver` watches it against the viewport, which also
//! counts the table's own scroll box clipping it, so it works in the page's scroll box and in an
//! embed whose host lets the table grow.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, IntersectionObserver, IntersectionObserverEntry};
use yew::prelude::*;

/// What the observer calls with its entries.
type OnEntries = Closure<dyn FnMut(js_sys::Array)>;

/// The line and the observer watching it.
pub struct More {
    node: NodeRef,
    /// The observer and the callback it calls (kept alive with it).
    observer: Option<(IntersectionObserver, OnEntries)>,
}

/// What the line says and whom it tells.
#[derive(Properties, PartialEq)]
pub struct MoreProps {
    /// Rows drawn.
    pub drawn: usize,
    /// Rows the table has (after its filter).
    pub total: usize,
    /// Called when the line comes into view.
    pub onvisible: Callback<()>,
}

impl Component for More {
    type Message = ();
    type Properties = MoreProps;

    fn create(_ctx: &Context<Self>) -> Self {
        More {
            node: NodeRef::default(),
            observer: None,
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let p = ctx.props();
        html! {
            <p class="more-rows note" ref={self.node.clone()}>
                { format!("{} of {} rows drawn while the statistics run: more follow as you scroll \
                           here, and all of them when the statistics finish.", p.drawn, p.total) }
            </p>
        }
    }

    fn rendered(&mut self, ctx: &Context<Self>, first: bool) {
        if first {
            let onvisible = ctx.props().onvisible.clone();
            let callback = OnEntries::new(move |entries: js_sys::Array| {
                let seen = entries.iter().any(|e| {
                    e.dyn_into::<IntersectionObserverEntry>()
                        .is_ok_and(|e| e.is_intersecting())
                });
                if seen {
                    onvisible.emit(());
                }
            });
            if let Ok(observer) = IntersectionObserver::new(callback.as_ref().unchecked_ref()) {
                self.observer = Some((observer, callback));
            }
        }
        // Observed again after every draw: an observer reports only changes, and after more
        // rows the line may still be in view (it then asks again at once).
        if let (Some((observer, _)), Some(line)) = (&self.observer, self.node.cast::<Element>()) {
            observer.unobserve(&line);
            observer.observe(&line);
        }
    }

    fn destroy(&mut self, _ctx: &Context<Self>) {
        if let Some((observer, _)) = &self.observer {
            observer.disconnect();
        }
    }
}
