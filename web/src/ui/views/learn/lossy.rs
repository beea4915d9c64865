//! Lesson `lossy` (NeuZip §2.3, BitSnap §3.4): what lossy codecs do to a real tensor. Every
//! setting the lesson offers is encoded with the codec the CLI uses, decoded back and compared
//! with the input by [`lossy::measure`]: NeuZip mantissa truncation (k = 0 / 1 / 3, normalization
//! blocks 32..512) with the histogram of its relative error and the paper's bound 2^-k beside the
//! measured maximum; BitSnap cluster quantization (K clusters) against naive uint8 with the
//! histograms of their errors, MSE, maximum and size; and size against error for every setting.
//! The encodes run in a worker of the lesson's own (a `WorkerRequest::LossySurvey`, all settings
//! at once), on at most [`MAX_VALUES`] values of the tensor, so the codecs' encoders stay out of
//! the page's module.
//!
//! This module holds the lesson's state, its worker and its controls; each part of the page is a
//! module of its own: [`neuzip`], [`bitsnap`], [`bins`] (Inshrinkerator's non-uniform bins against
//! uniform ones, paper 002, Table 7, measured in a worker of its own) and [`curve`] (size against
//! error for every setting).

mod bins;
mod bitsnap;
mod curve;
mod neuzip;

use super::source::{self, Arrived, Chosen, Tensors};
use super::{param, param_num, stepped, write_state, Lesson, Listener};
use crate::model::format::{count, number};
use crate::ui::charts::{binned_bars, BarChart};
use crate::ui::jobs::to_ref;
use crate::ui::shared::Shared;
use crate::ui::worker::WorkerHandle;
use bitlens_lessons::lossy::{self, Histogram, Survey, CLUSTERS, NEUZIP_BITS, NEUZIP_BLOCKS};
use bitlens_protocol::js::{Event as WorkerEvent, Request};
use bitlens_protocol::JobResult;
use curve::Metric;
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The most values the lesson encodes: 21 settings are each encoded and decoded (in a worker),
/// so a larger tensor is measured on its first values.
pub const MAX_VALUES: usize = 1 << 18;

/// Props of [`LossyLesson`].
#[derive(Properties, PartialEq)]
pub struct LossyProps {
    /// The tensors to choose from.
    pub tensors: Tensors,
    /// The state from the link: `tensor`, `k`, `block`, `clusters`, `metric`, `bins`, `beta`.
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`LossyLesson`].
pub enum Msg {
    /// Another tensor.
    Tensor(String),
    /// NeuZip mantissa bits.
    K(u32),
    /// NeuZip normalization block.
    Block(usize),
    /// BitSnap clusters.
    Clusters(usize),
    /// The curve's error.
    Metric(Metric),
    /// Inshrinkerator's bin count.
    Bins(u32),
    /// Inshrinkerator's `β`.
    Balance(f64),
    /// A step of the block size: −1, +1, first, last.
    Step(i64),
    /// A tensor's data arrived.
    Loaded(Arrived),
    /// The worker reported.
    Worker(WorkerEvent),
}

/// The lesson's state.
pub struct LossyLesson {
    chosen: Chosen,
    k: u32,
    block: usize,
    clusters: usize,
    metric: Metric,
    /// Inshrinkerator's bin count and `β`.
    bins: u32,
    balance: f64,
    /// Every setting measured, once the worker answers.
    survey: Option<Rc<Survey>>,
    /// The worker measuring the settings, started with the first tensor.
    worker: Option<WorkerHandle>,
    /// Counts the surveys asked for: an answer to an earlier one is dropped.
    task: u32,
    error: Option<String>,
    /// The block select, which the step keys change: its shown value follows the state.
    block_select: NodeRef,
    _keys: Option<Listener>,
}

impl LossyLesson {
    fn load(&mut self, ctx: &Context<Self>) {
        self.survey = None;
        self.chosen
            .load(&ctx.props().tensors, ctx.link(), Msg::Loaded);
    }

    /// Asks the worker to measure every setting on the tensor's first [`MAX_VALUES`] values.
    fn start(&mut self, ctx: &Context<Self>) {
        let Some(t) = self.chosen.source(&ctx.props().tensors) else {
            return;
        };
        self.task += 1;
        self.survey = None;
        self.error = None;
        if self.worker.is_none() {
            let events = ctx.link().callback(Msg::Worker);
            match WorkerHandle::spawn("worker.js", "lesson worker", events) {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        let Some(worker) = &self.worker else {
            return;
        };
        let values = t.elements().min(MAX_VALUES as u64);
        let posted = worker.post(&Request::LossySurvey {
            task: self.task,
            file: to_ref(&t.file),
            offset: t.offset,
            bytes: values * t.width() as u64,
            dtype: t.dtype,
        });
        if let Err(e) = posted {
            self.error = Some(e);
        }
    }

    /// Keeps the worker's answer to the current survey.
    fn answer(&mut self, e: WorkerEvent) -> bool {
        match e {
            WorkerEvent::Done {
                task,
                result: JobResult::LossySurvey(s),
                ..
            } if task == self.task => {
                self.survey = Some(Rc::new(*s));
                true
            }
            WorkerEvent::Failed { task, message } if task.is_none_or(|t| t == self.task) => {
                if task.is_none() {
                    // A crashed worker does not answer again: the next tensor starts another.
                    self.worker = None;
                }
                self.error = Some(format!("{}: {message}", self.chosen.name));
                true
            }
            _ => false,
        }
    }

    /// How many settings are measured.
    fn measured(&self) -> usize {
        self.survey.as_ref().map_or(0, |s| s.all().count())
    }

    fn write_link(&self) {
        write_state(
            Lesson::Lossy,
            &[
                ("tensor", self.chosen.name.clone()),
                ("k", self.k.to_string()),
                ("block", self.block.to_string()),
                ("clusters", self.clusters.to_string()),
                ("metric", self.metric.name().to_string()),
                ("bins", self.bins.to_string()),
                ("beta", self.balance.to_string()),
            ],
        );
    }
}

/// `v` if it is one of `allowed`, else `default`.
fn one_of<T: PartialEq + Copy>(v: Option<T>, allowed: &[T], default: T) -> T {
    v.filter(|v| allowed.contains(v)).unwrap_or(default)
}

/// A labelled select of `options`, `current` selected.
fn choice<T: ToString + PartialEq + Copy>(
    id: &str,
    label: &str,
    options: &[T],
    current: T,
    onchange: Callback<Event>,
    node: NodeRef,
) -> Html {
    html! {
        <label class="control">{ label }
            <select id={id.to_owned()} {onchange} ref={node}>
                { for options.iter().map(|&o| html! { <option value={o.to_string()} selected={o == current}>{ o.to_string() }</option> }) }
            </select>
        </label>
    }
}

/// A select's value parsed, from its change event.
fn selected<T: std::str::FromStr>(e: &Event) -> Option<T> {
    let s: HtmlSelectElement = e.target_unchecked_into();
    s.value().parse().ok()
}

impl Component for LossyLesson {
    type Message = Msg;
    type Properties = LossyProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = LossyLesson {
            chosen: Chosen::new(&p.tensors, param(&p.params, "tensor")),
            k: one_of(param_num(&p.params, "k"), &NEUZIP_BITS, 3),
            block: one_of(param_num(&p.params, "block"), &NEUZIP_BLOCKS, 512),
            clusters: one_of(param_num(&p.params, "clusters"), &CLUSTERS, 16),
            metric: if param(&p.params, "metric") == Some("rms") {
                Metric::Rms
            } else {
                Metric::MaxRel
            },
            bins: param_num(&p.params, "bins")
                .filter(|b| (bins::MIN_BINS..=bins::MAX_BINS).contains(b))
                .unwrap_or(16),
            balance: one_of(param_num(&p.params, "beta"), &bins::BALANCES, 0.5),
            survey: None,
            worker: None,
            task: 0,
            error: None,
            block_select: NodeRef::default(),
            _keys: Listener::steps(ctx.link().callback(Msg::Step)),
        };
        me.load(ctx);
        me
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &Self::Properties) -> bool {
        let new = &ctx.props().tensors;
        self.chosen
            .follow(&old.tensors, new, ctx.link(), Msg::Loaded);
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Tensor(name) => {
                self.chosen.name = name;
                self.load(ctx);
            }
            Msg::K(k) => self.k = k,
            Msg::Block(b) => self.block = b,
            Msg::Clusters(c) => self.clusters = c,
            Msg::Metric(m) => self.metric = m,
            Msg::Bins(b) => self.bins = b.clamp(bins::MIN_BINS, bins::MAX_BINS),
            Msg::Balance(b) => self.balance = one_of(Some(b), &bins::BALANCES, self.balance),
            Msg::Step(s) => {
                let at = NEUZIP_BLOCKS
                    .iter()
                    .position(|&b| b == self.block)
                    .unwrap_or(0);
                let Some(to) = stepped(at, s, NEUZIP_BLOCKS.len()) else {
                    return false;
                };
                self.block = NEUZIP_BLOCKS[to];
            }
            Msg::Loaded(a) => match self.chosen.arrive(a) {
                None => return false,
                Some(Ok(())) => self.start(ctx),
                Some(Err(e)) => self.error = Some(e),
            },
            Msg::Worker(e) => return self.answer(e),
        }
        self.write_link();
        true
    }

    fn rendered(&mut self, _ctx: &Context<Self>, _first: bool) {
        // An option's `selected` does not move a select the user has changed.
        if let Some(s) = self.block_select.cast::<HtmlSelectElement>() {
            s.set_value(&self.block.to_string());
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let head = html! {
            <>
                <h2 id="lesson-lossy-title">{ format!("{}. Lossy compression: the error against its bound", Lesson::Lossy.number()) }</h2>
                <p class="lead">{ "Lossy codecs give up exactness for size. What they guarantee is a bound on the error: below, each codec is run for real on a tensor — encoded as the CLI encodes, decoded back — and the error of every value is measured and set beside the bound the paper promises." }</p>
            </>
        };
        let Some(s) = self.survey.clone() else {
            return html! {
                <section class="lesson" id="lesson-lossy" aria-labelledby="lesson-lossy-title">
                    { head }
                    if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                    else { <p class="note">{ "Encoding and decoding every setting in a worker…" }</p> }
                </section>
            };
        };
        let link = ctx.link();
        let t = self.chosen.source(&ctx.props().tensors);
        let total = t.as_ref().map_or(s.values, |t| t.elements());
        let dtype = t.as_ref().map_or(String::new(), |t| t.dtype.to_string());
        let settings = lossy::settings().len();
        let scope = if s.values < total {
            format!("Measured on the first {} of the {} values of {} ({dtype}): the lesson encodes and decodes {settings} settings in a worker, at most {} values.",
                s.values, total, self.chosen.name, MAX_VALUES)
        } else {
            format!("Measured on all {} values of {} ({dtype}); the lesson encodes and decodes {settings} settings in a worker, at most {} values of a tensor.",
                s.values, self.chosen.name, MAX_VALUES)
        };
        html! {
            <section class="lesson" id="lesson-lossy" aria-labelledby="lesson-lossy-title"
                     data-k={self.k.to_string()} data-block={self.block.to_string()}
                     data-clusters={self.clusters.to_string()} data-metric={self.metric.name()}
                     data-values={s.values.to_string()} data-measured={self.measured().to_string()}>
                { head }
                <div class="controls">
                    { source::picker(&ctx.props().tensors, &self.chosen.name, link.callback(Msg::Tensor)) }
                </div>
                <p class="muted" id="lossy-scope">{ scope }</p>
                if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                { self.neuzip(ctx, &s, &dtype) }
                { self.bitsnap(ctx, &s) }
                { self.inshrink(ctx, s.values) }
                { self.curve(ctx, &s) }
            </section>
        }
    }
}

impl LossyLesson {
    /// Inshrinkerator's part, on the values the other parts measure.
    fn inshrink(&self, ctx: &Context<Self>, values: u64) -> Html {
        let Some(t) = self.chosen.source(&ctx.props().tensors) else {
            return html! {};
        };
        let link = ctx.link();
        html! {
            <bins::Bins file={t.file.clone()} offset={t.offset} bytes={values * t.width() as u64}
                        dtype={t.dtype} name={self.chosen.name.clone()} bins={self.bins}
                        balance={self.balance} on_bins={link.callback(Msg::Bins)}
                        on_balance={link.callback(Msg::Balance)} />
        }
    }
}

/// A table head: the title of the rows' names, then the columns'.
fn head_row(first: &str, titles: &[&str]) -> Html {
    html! {
        <thead><tr>
            <th scope="col">{ first }</th>
            { for titles.iter().map(|t| html! { <th scope="col">{ *t }</th> }) }
        </tr></thead>
    }
}

/// An error histogram as bars, labelled by each bin's centre.
fn error_histogram(id: &str, h: &Histogram, color: &str, title: &str, x_label: &str) -> Html {
    let bars = binned_bars(h.lo, h.hi, &h.counts, color, |c, a, b| {
        format!(
            "{} values with an error in [{}, {})",
            count(c),
            number(a, 3),
            number(b, 3)
        )
    });
    html! {
        <BarChart id={id.to_owned()} title={title.to_owned()} bars={Shared::new(bars)}
                  x_label={x_label.to_owned()} y_label="values" height={240.0} />
    }
}
