//! Teaching mode (issue 14): lessons on real tensors, reachable at `#learn/<lesson>` with their
//! state in the hash's query (`#learn/huffman?tensor=NAME&group=1&block=3`), so a link opens the
//! same tensor, block and step. Every number a lesson shows is computed by the lessons crate
//! (`bitlens_lessons`: `anatomy`, `huffman`, `rans`, …, over the codecs' own functions) on a
//! tensor of the loaded checkpoint, or of the bundled demo, which loads by itself when nothing is
//! open.
//!
//! - this module: the [`Route`] (read from and written to the hash), the [`Learn`] router with the
//!   lesson list, the presentation toggle and the print button, and window [`Listener`]s.
//! - [`source`]: the tensors a lesson can read, and the tensor picker.
//! - [`float`], [`huffman`], [`ans`], [`lossy`]: one lesson each; [`tree`]: the Huffman code tree
//!   as SVG.
//! - [`grouping`], [`delta`] (`bitlens_lessons::{grouping, delta}`): where the entropy lives, and
//!   two checkpoints (the active one and the one before it, [`delta::pair`]).

pub mod ans;
pub mod delta;
pub mod float;
pub mod grouping;
pub mod huffman;
pub mod lossy;
pub mod source;
mod tree;

use gloo_events::{EventListener, EventListenerOptions};
use source::Tensors;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use web_sys::{Event, KeyboardEvent};
use yew::prelude::*;

/// A lesson.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lesson {
    /// Anatomy of a float.
    Float,
    /// Huffman vs entropy on one block.
    Huffman,
    /// rANS step by step.
    Ans,
    /// Where the entropy lives: byte grouping.
    Grouping,
    /// Lossy codecs: error against bound, size against error.
    Lossy,
    /// Two checkpoints: bit flips and deltas.
    Delta,
}

impl Lesson {
    /// Every lesson, in teaching order.
    pub const ALL: [Lesson; 6] = [
        Lesson::Float,
        Lesson::Grouping,
        Lesson::Huffman,
        Lesson::Ans,
        Lesson::Lossy,
        Lesson::Delta,
    ];

    /// Its name in the hash.
    pub fn name(self) -> &'static str {
        match self {
            Lesson::Float => "float",
            Lesson::Huffman => "huffman",
            Lesson::Ans => "ans",
            Lesson::Grouping => "grouping",
            Lesson::Delta => "delta",
            Lesson::Lossy => "lossy",
        }
    }

    /// Its title.
    pub fn title(self) -> &'static str {
        match self {
            Lesson::Float => "Anatomy of a float",
            Lesson::Huffman => "Huffman vs entropy",
            Lesson::Ans => "rANS step by step",
            Lesson::Grouping => "Where the entropy lives",
            Lesson::Delta => "Two checkpoints",
            Lesson::Lossy => "Lossy: error vs bound",
        }
    }

    /// Its number in the teaching order (from 1), as the lesson list shows it.
    pub fn number(self) -> usize {
        Lesson::ALL
            .iter()
            .position(|&l| l == self)
            .map_or(0, |i| i + 1)
    }

    /// Its heading: number and title.
    pub fn heading(self) -> String {
        format!("{}. {}", self.number(), self.title())
    }

    fn from_name(name: &str) -> Option<Lesson> {
        Lesson::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// The lesson and its state, from the page's hash `#learn/<lesson>?key=value&…` (`float`:
/// `tensor`, `index` or `value`; `huffman`: `tensor`, `group`, `block`, both from 0; `ans`:
/// `tensor`, `n`, `step`; `grouping`: `tensor`, `transform`, `group`; `delta`: `tensor`, `p`;
/// `lossy`: `tensor`, `k`, `block`, `clusters`, `metric`).
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The lesson.
    pub lesson: Lesson,
    /// Its state, decoded, in order.
    pub params: Rc<Vec<(String, String)>>,
}

impl Route {
    /// The route of the page's current hash, if it is a lesson's.
    pub fn current() -> Option<Route> {
        let hash = web_sys::window()?.location().hash().ok()?;
        Route::parse(&hash)
    }

    /// The route of a hash (`#learn/float?value=0.1`); `None` for any other hash.
    pub fn parse(hash: &str) -> Option<Route> {
        let rest = hash.strip_prefix("#learn/")?;
        let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
        let lesson = Lesson::from_name(name).unwrap_or(Lesson::Float);
        let params = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        Some(Route {
            lesson,
            params: Rc::new(params),
        })
    }
}

/// The value of `key` in a lesson's state.
pub fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A number in a lesson's state.
pub fn param_num<T: std::str::FromStr>(params: &[(String, String)], key: &str) -> Option<T> {
    param(params, key)?.parse().ok()
}

fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    js_sys::decode_uri_component(&s)
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or(s)
}

/// Writes a lesson's state into the page's hash with `history.replaceState` (no history entry,
/// no `hashchange`: the lesson keeps its state; a copied link reopens it).
pub fn write_state(lesson: Lesson, pairs: &[(&str, String)]) {
    let Some(w) = web_sys::window() else {
        return;
    };
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", String::from(js_sys::encode_uri_component(v))))
        .collect();
    let hash = if query.is_empty() {
        format!("#learn/{}", lesson.name())
    } else {
        format!("#learn/{}?{}", lesson.name(), query.join("&"))
    };
    let loc = w.location();
    let (Ok(path), Ok(search)) = (loc.pathname(), loc.search()) else {
        return;
    };
    if loc.hash().ok().as_deref() == Some(hash.as_str()) {
        return;
    }
    if let Ok(h) = w.history() {
        // A refused write only leaves the link stale.
        let _ = h.replace_state_with_url(
            &wasm_bindgen::JsValue::NULL,
            "",
            Some(&format!("{path}{search}{hash}")),
        );
    }
}

/// An event listener on the window (gloo-events), removed when dropped.
pub struct Listener {
    _listener: EventListener,
}

impl Listener {
    /// Listens to `kind` events on the window; `f` may call `preventDefault` (the listener is not
    /// passive, as `addEventListener` makes it by default).
    pub fn window(kind: &'static str, f: impl FnMut(&Event) + 'static) -> Option<Listener> {
        let window = web_sys::window()?;
        let options = EventListenerOptions::enable_prevent_default();
        Some(Listener {
            _listener: EventListener::new_with_options(&window, kind, options, f),
        })
    }

    /// Listens to the step keys (←/→, Home/End) outside text fields and selects: `cb` gets −1,
    /// +1, `i64::MIN` (Home) or `i64::MAX` (End).
    pub fn steps(cb: Callback<i64>) -> Option<Listener> {
        Listener::window("keydown", move |e: &Event| {
            let Some(k) = e.dyn_ref::<KeyboardEvent>() else {
                return;
            };
            if k.alt_key() || k.ctrl_key() || k.meta_key() {
                return;
            }
            let in_field = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|el| {
                    matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA")
                });
            if in_field {
                return;
            }
            let step = match k.key().as_str() {
                "ArrowLeft" => -1,
                "ArrowRight" => 1,
                "Home" => i64::MIN,
                "End" => i64::MAX,
                _ => return,
            };
            e.prevent_default();
            cb.emit(step);
        })
    }
}

/// Props of [`Learn`].
#[derive(Properties, PartialEq)]
pub struct LearnProps {
    /// The lesson and its state.
    pub route: Route,
    /// The tensors the lessons can read.
    pub tensors: Tensors,
    /// Something is loading.
    pub loading: bool,
    /// Any checkpoint is open.
    pub has_checkpoints: bool,
    /// Load the bundled demo.
    pub on_demo: Callback<()>,
    /// Two checkpoints for the `delta` lesson.
    #[prop_or_default]
    pub pair: Option<Rc<delta::Pair>>,
}

/// The lessons: their list, the presentation and print buttons, and the open lesson.
#[function_component(Learn)]
pub fn learn(p: &LearnProps) -> Html {
    let presenting = use_state(|| false);
    let asked = use_mut_ref(|| false);
    {
        // Nothing open: the lessons run on the bundled demo.
        let (on_demo, asked) = (p.on_demo.clone(), asked.clone());
        use_effect_with((p.has_checkpoints, p.loading), move |&(has, loading)| {
            if !has && !loading && !*asked.borrow() {
                *asked.borrow_mut() = true;
                on_demo.emit(());
            }
        });
    }
    let lesson = p.route.lesson;
    let toggle = {
        let presenting = presenting.clone();
        Callback::from(move |_| presenting.set(!*presenting))
    };
    let print = Callback::from(|_| {
        if let Some(w) = web_sys::window() {
            // Printing refused (a sandboxed frame) leaves nothing to do.
            let _ = w.print();
        }
    });
    let body = if p.tensors.is_empty() {
        if p.loading || !p.has_checkpoints {
            html! { <p class="note" id="learn-wait">{ "Loading the bundled demo checkpoint…" }</p> }
        } else {
            let demo = p.on_demo.reform(|_| ());
            html! {
                <p class="note" id="learn-wait">
                    { "The lessons read bf16, fp16 or fp32 tensors of local files or of the bundled demo; the open checkpoint has none they can read. " }
                    <button class="button" onclick={demo}>{ "Load the demo" }</button>
                </p>
            }
        }
    } else {
        let params = p.route.params.clone();
        let tensors = p.tensors.clone();
        // A link followed (a new hash) starts the lesson afresh from its state; the lesson's own
        // changes rewrite the hash without a `hashchange`, so they keep it.
        let key = format!("{}{:?}", lesson.name(), params);
        // A link's tensor of a local file that is not open (links do not carry local files).
        let missing = param(&params, "tensor")
            .filter(|n| !tensors.iter().any(|t| t.name == *n))
            .map(|n| html! {
                <p class="note" id="learn-missing">{ format!("{n} is not in the open checkpoint (a link cannot reopen local files): showing its largest tensor.") }</p>
            });
        html! {
            <>
                { missing.unwrap_or_default() }
                { match lesson {
                    Lesson::Float => html! { <float::FloatLesson {key} {tensors} {params} /> },
                    Lesson::Huffman => html! { <huffman::HuffmanLesson {key} {tensors} {params} /> },
                    Lesson::Ans => html! { <ans::AnsLesson {key} {tensors} {params} /> },
                    Lesson::Grouping => html! { <grouping::GroupingLesson {key} {tensors} {params} /> },
                    Lesson::Delta => html! { <delta::DeltaLesson {key} pair={p.pair.clone()} {params} /> },
                    Lesson::Lossy => html! { <lossy::LossyLesson {key} {tensors} {params} /> },
                } }
            </>
        }
    };
    html! {
        <div class={classes!("learn", presenting.then_some("presenting"))} data-lesson={lesson.name()}>
            <nav class="learn-nav" aria-label="Lessons">
                { for Lesson::ALL.iter().map(|l| {
                    let current = *l == lesson;
                    html! {
                        <a class={classes!("lesson-link", current.then_some("current"))}
                           href={format!("#learn/{}", l.name())}
                           aria-current={current.then_some("page")}>{ l.heading() }</a>
                    }
                }) }
                <span class="learn-tools">
                    <button id="present-toggle" class="button" aria-pressed={presenting.to_string()} onclick={toggle}
                            title="Large text for a projector">{ "Presentation" }</button>
                    <button id="print-lesson" class="button" onclick={print}>{ "Print" }</button>
                    <a class="button subtle" href="#">{ "Back to the app" }</a>
                </span>
            </nav>
            { body }
        </div>
    }
}

/// "The paper says …, measured here: …": one sentence of a paper's claim beside the figure
/// measured on the lesson's tensor.
pub fn claim(paper: &str, says: &str, measured: Html) -> Html {
    html! {
        <aside class="claim">
            <p><span class="claim-paper">{ paper }</span>{ " " }{ says }</p>
            <p class="claim-measured"><strong>{ "Measured here: " }</strong>{ measured }</p>
        </aside>
    }
}

/// Where a step key (−1, +1, `i64::MIN` for Home, `i64::MAX` for End, as [`Listener::steps`]
/// gives them) moves from `current` among `count` steps; `None` when it stays.
pub fn stepped(current: usize, step: i64, count: usize) -> Option<usize> {
    let last = count.saturating_sub(1) as i64;
    let to = match step {
        i64::MIN => 0,
        i64::MAX => last,
        s => (current as i64).saturating_add(s).clamp(0, last),
    } as usize;
    (to != current).then_some(to)
}

/// A number for a `data-*` attribute that JavaScript's `Number()` reads back exactly.
pub fn js_number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{v:?}")
    }
}
