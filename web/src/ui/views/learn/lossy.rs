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
//! [`bins`]: Inshrinkerator's non-uniform bins against uniform ones (paper 002, Table 7), measured
//! in a worker of its own.

mod bins;

use super::source::{self, Arrived, Chosen, Tensors};
use super::{claim, js_number, param, param_num, stepped, write_state, Lesson, Listener};
use crate::model::format::{bytes, count, number};
use crate::ui::charts::frame::{
    figure, use_hover, x_axis_title, x_tick, BOTTOM, LEFT, RIGHT, TOP, W,
};
use crate::ui::charts::{Bar, BarChart};
use crate::ui::jobs::to_ref;
use crate::ui::shared::Shared;
use crate::ui::worker::WorkerHandle;
use bitlens_lessons::lossy::{
    self, Histogram, Measure, Setting, Survey, CLUSTERS, NEUZIP_BITS, NEUZIP_BLOCKS,
};
use bitlens_protocol::js::{Event as WorkerEvent, Request};
use bitlens_protocol::JobResult;
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The most values the lesson encodes: 21 settings are each encoded and decoded (in a worker),
/// so a larger tensor is measured on its first values.
pub const MAX_VALUES: usize = 1 << 18;

/// The error the curve plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Largest |x̂ − x| / |x|.
    MaxRel,
    /// √MSE.
    Rms,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::MaxRel => "max-rel",
            Metric::Rms => "rms",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::MaxRel => "largest relative error |x̂ − x| / |x| (log scale)",
            Metric::Rms => "RMS error √MSE (log scale)",
        }
    }

    fn of(self, m: &Measure) -> f64 {
        match self {
            Metric::MaxRel => m.errors.max_rel,
            Metric::Rms => m.errors.rms,
        }
    }
}

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

    fn neuzip(&self, ctx: &Context<Self>, s: &Survey, dtype: &str) -> Html {
        let link = ctx.link();
        let setting = Setting::Neuzip {
            k: self.k,
            block: self.block,
        };
        let Some(m) = s.find(setting) else {
            return html! {};
        };
        let e = &m.errors;
        let width_bits = 8.0
            * self
                .chosen
                .source(&ctx.props().tensors)
                .map_or(2.0, |t| t.width() as f64);
        let share = m.bits_per_value / width_bits;
        let measured = html! {
            <span id="neuzip-claim" data-measured-max={js_number(m.measured_max())} data-bound={js_number(m.bound)}>
                { format!("k = {}, blocks of {}: the largest relative error is {} — within the bound 2^-{} = {}; the stream takes {:.2} bits a value, {:.1} % of the {dtype} size.",
                    self.k, self.block, number(e.max_rel, 4), self.k, number(m.bound, 4),
                    m.bits_per_value, 100.0 * share) }
            </span>
        };
        let onk = link.batch_callback(|e: Event| selected(&e).map(Msg::K));
        let onblock = link.batch_callback(|e: Event| selected(&e).map(Msg::Block));
        html! {
            <section class="lossy-part" id="lossy-neuzip" aria-labelledby="lossy-neuzip-title">
                <h3 id="lossy-neuzip-title">{ "NeuZip: keep k mantissa bits" }</h3>
                <p>{ "NeuZip codes the exponents losslessly (see the rANS lesson) and, for inference, rounds each mantissa to its k most significant bits. Before rounding, each block of B weights is divided by the significand of its largest weight, stored in one byte per block, so that weight comes back exact." }</p>
                { claim(
                    "NeuZip §2.3:",
                    "keeping the k most significant mantissa bits changes each weight by at most 2^-k of itself (k = 0, 1 or 3, so the fields fill whole bytes); with 3 bits models stay nearly lossless in under half the memory.",
                    measured,
                ) }
                <div class="controls">
                    { choice("neuzip-k", "Mantissa bits k ", &NEUZIP_BITS, self.k, onk, NodeRef::default()) }
                    { choice("neuzip-block", "Normalization block (values) ", &NEUZIP_BLOCKS, self.block, onblock, self.block_select.clone()) }
                    <span class="muted">{ "← / → change the block size" }</span>
                </div>
                <div class="lesson-grid">
                    { figures_table("neuzip-figures", m, &[
                        ("bound", format!("guaranteed: 2^-{} (the paper)", self.k), m.bound),
                        ("tight-bound", "this encoder: 2^-(k+1) + the format's rounding".into(), m.tight_bound),
                        ("max-rel", "measured: largest relative error".into(), e.max_rel),
                        ("max-abs", "measured: largest absolute error".into(), e.max_abs),
                        ("rms", "measured: RMS error".into(), e.rms),
                    ]) }
                    { histogram("neuzip-histogram", &e.histogram, "var(--accent, #3b6fd8)",
                        &format!("Relative error of {} non-zero values, k = {}, blocks of {}: largest {} of the bound {}",
                            count(e.histogram.counts.iter().sum()), self.k, self.block, number(e.max_rel, 3), number(m.bound, 3)),
                        "relative error (x̂ − x) / x; the axis spans ± the bound 2^-k") }
                </div>
            </section>
        }
    }

    fn bitsnap(&self, ctx: &Context<Self>, s: &Survey) -> Html {
        let link = ctx.link();
        let Some(b) = s.find(Setting::Bitsnap {
            clusters: self.clusters,
        }) else {
            return html! {};
        };
        let n = &s.naive;
        let fp32_ratio = 32.0 / b.bits_per_value;
        let measured = html! {
            <span id="bitsnap-claim" data-ratio={js_number(fp32_ratio)} data-mse={js_number(b.errors.mse)}
                  data-naive-mse={js_number(n.errors.mse)}>
                { format!("K = {}: {:.2}× smaller than fp32 ({:.2} bits a value); MSE {} against naive uint8's {} ({}).",
                    self.clusters, fp32_ratio, b.bits_per_value, number(b.errors.mse, 3), number(n.errors.mse, 3),
                    if b.errors.mse < n.errors.mse {
                        format!("{:.1}× lower", n.errors.mse / b.errors.mse.max(f64::MIN_POSITIVE))
                    } else {
                        "not lower".to_string()
                    }) }
            </span>
        };
        let onk = link.batch_callback(|e: Event| selected(&e).map(Msg::Clusters));
        let range = format!(
            "absolute error x̂ − x; the axis spans ± naive uint8's bound {}",
            number(n.bound, 3)
        );
        html! {
            <section class="lossy-part" id="lossy-bitsnap" aria-labelledby="lossy-bitsnap-title">
                <h3 id="lossy-bitsnap-title">{ "BitSnap: K clusters against naive uint8" }</h3>
                <p>{ "Naive uint8 spreads 256 codes evenly between the tensor's minimum and maximum: a few outliers stretch the step for everyone. BitSnap cuts the values into K clusters at the quantiles of a normal distribution (dense near the mean), gives each cluster its own minimum and maximum, and stores a 4-bit cluster label beside each 8-bit code. Either way a value is off by at most half its code step." }</p>
                { claim(
                    "BitSnap §3.4:",
                    "cluster-based uint8 quantization (K = 16 clusters, 4-bit labels) stores fp32 optimizer states in 12 bits a value — 2.67× smaller — with a lower MSE than naive uint8 quantization.",
                    measured,
                ) }
                <p class="muted">{ "BitSnap quantizes fp32 values: the lesson widens the tensor's values to fp32 (exactly) and quantizes those; the errors are against the original values." }</p>
                <div class="controls">
                    { choice("bitsnap-clusters", "Clusters K ", &CLUSTERS, self.clusters, onk, NodeRef::default()) }
                </div>
                <figure class="costs" data-chart="quant-figures">
                    <figcaption><span class="chart-title">{ format!("BitSnap with K = {} against naive uint8, on {} values", self.clusters, count(s.values)) }</span></figcaption>
                    <table id="quant-figures" aria-label="Size and error of BitSnap and naive uint8">
                        { head_row("", &["bytes", "bits / value", "× smaller than fp32", "MSE", "largest error", "guaranteed bound"]) }
                        <tbody>
                            { quant_row("bitsnap", &format!("BitSnap, K = {}", self.clusters), b) }
                            { quant_row("naive", "naive uint8", n) }
                        </tbody>
                    </table>
                    <p class="muted">{ format!("Sizes: BitSnap's encoded stream (the CLI's bitsnap-quant codec, K × 8 bytes of cluster ranges included); naive uint8: one code byte a value plus its minimum and maximum ({} bytes). Bound: half the widest code step plus the rounding into fp32.", lossy::NAIVE_HEADER_BYTES) }</p>
                </figure>
                <div class="lesson-grid">
                    { histogram("bitsnap-histogram", &b.errors.histogram, "#2e8b57",
                        &format!("BitSnap error, K = {}: largest {} (bound {}), MSE {}", self.clusters,
                            number(b.errors.max_abs, 3), number(b.bound, 3), number(b.errors.mse, 3)), &range) }
                    { histogram("naive-histogram", &n.errors.histogram, "#c0504d",
                        &format!("Naive uint8 error: largest {} (bound {}), MSE {}",
                            number(n.errors.max_abs, 3), number(n.bound, 3), number(n.errors.mse, 3)), &range) }
                </div>
            </section>
        }
    }

    fn curve(&self, ctx: &Context<Self>, s: &Rc<Survey>) -> Html {
        let onmetric = ctx.link().callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Metric(if s.value() == "rms" {
                Metric::Rms
            } else {
                Metric::MaxRel
            })
        });
        let current = [
            Setting::Neuzip {
                k: self.k,
                block: self.block,
            },
            Setting::Bitsnap {
                clusters: self.clusters,
            },
            Setting::NaiveUint8,
        ];
        html! {
            <section class="lossy-part" id="lossy-curve" aria-labelledby="lossy-curve-title">
                <h3 id="lossy-curve-title">{ "Size against error, every setting" }</h3>
                <p>{ "Each point is one setting measured on the same values: fewer bits a value cost more error. NeuZip's block size moves along a short line (smaller blocks: a byte more per block, a smaller error); BitSnap's clusters buy error with labels. The uint8 codes bound the absolute error, not the relative one: a weight near zero can come back many times too large, which is why their largest relative errors sit far above NeuZip's." }</p>
                <div class="controls">
                    <label class="control">{ "Error " }
                        <select id="curve-metric" onchange={onmetric}>
                            <option value="max-rel" selected={self.metric == Metric::MaxRel}>{ "largest relative error" }</option>
                            <option value="rms" selected={self.metric == Metric::Rms}>{ "RMS error" }</option>
                        </select>
                    </label>
                </div>
                <Scatter survey={Shared::from(s.clone())} metric={self.metric} current={Shared::new(current.to_vec())} />
                <details>
                    <summary>{ "The points as a table" }</summary>
                    <table class="curve-table" aria-label="Size and error of every setting">
                        { head_row("setting", &["bits / value", "largest relative error", "RMS error", "largest absolute error"]) }
                        <tbody>
                            { for s.all().map(|m| {
                                let cells = [format!("{:.3}", m.bits_per_value), number(m.errors.max_rel, 4),
                                    number(m.errors.rms, 4), number(m.errors.max_abs, 4)];
                                html! {
                                    <tr><th scope="row">{ setting_name(m.setting) }</th>
                                        { for cells.into_iter().map(|c| html! { <td class="num">{ c }</td> }) }</tr>
                                }
                            }) }
                        </tbody>
                    </table>
                </details>
            </section>
        }
    }
}

/// A measure's figures: one row per `(id, what, value)`, and its size.
fn figures_table(id: &str, m: &Measure, rows: &[(&str, String, f64)]) -> Html {
    html! {
        <figure class="costs" data-chart={id.to_owned()}>
            <table id={id.to_owned()} aria-label="Bound, measured error and size"
                   data-measured-max={js_number(m.measured_max())} data-bound={js_number(m.bound)}
                   data-tight-bound={js_number(m.tight_bound)} data-bytes={m.bytes.to_string()}
                   data-mse={js_number(m.errors.mse)} data-values={m.errors.values.to_string()}>
                <tbody>
                    { for rows.iter().map(|(row, what, v)| html! {
                        <tr data-figure={row.to_string()} data-value={js_number(*v)}>
                            <th scope="row">{ what.clone() }</th><td class="num">{ number(*v, 4) }</td>
                        </tr>
                    }) }
                    <tr data-figure="size">
                        <th scope="row">{ "encoded size" }</th>
                        <td class="num">{ format!("{} ({:.2} bits a value)", bytes(m.bytes), m.bits_per_value) }</td>
                    </tr>
                </tbody>
            </table>
        </figure>
    }
}

fn quant_row(id: &str, what: &str, m: &Measure) -> Html {
    let cells = [
        m.bytes.to_string(),
        format!("{:.3}", m.bits_per_value),
        format!("{:.2}×", 32.0 / m.bits_per_value),
        number(m.errors.mse, 3),
        number(m.errors.max_abs, 3),
        number(m.bound, 3),
    ];
    html! {
        <tr data-quant={id.to_owned()} data-bytes={m.bytes.to_string()} data-mse={js_number(m.errors.mse)}
            data-measured-max={js_number(m.errors.max_abs)} data-bound={js_number(m.bound)}>
            <th scope="row">{ what }</th>
            { for cells.into_iter().map(|c| html! { <td class="num">{ c }</td> }) }
        </tr>
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
fn histogram(id: &str, h: &Histogram, color: &str, title: &str, x_label: &str) -> Html {
    let bins = h.counts.len().max(1);
    let width = (h.hi - h.lo) / bins as f64;
    let bars: Vec<Bar> = h
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (a, b) = (h.lo + i as f64 * width, h.lo + (i + 1) as f64 * width);
            Bar {
                label: number((a + b) / 2.0, 2),
                value: c as f64,
                color: color.to_owned(),
                tip: format!(
                    "{} values with an error in [{}, {})",
                    count(c),
                    number(a, 3),
                    number(b, 3)
                ),
            }
        })
        .collect();
    html! {
        <BarChart id={id.to_owned()} title={title.to_owned()} bars={Shared::new(bars)}
                  x_label={x_label.to_owned()} y_label="values" height={240.0} />
    }
}

/// A setting's name, e.g. `NeuZip k = 3, B = 512`.
fn setting_name(s: Setting) -> String {
    match s {
        Setting::Neuzip { k, block } => format!("NeuZip k = {k}, B = {block}"),
        Setting::Bitsnap { clusters } => format!("BitSnap K = {clusters}"),
        Setting::NaiveUint8 => "naive uint8".into(),
    }
}

/// A setting's family (its colour and legend entry) and the family's name.
fn family(s: Setting) -> (&'static str, &'static str) {
    match s {
        Setting::Neuzip { k: 0, .. } => ("#8e44ad", "NeuZip k = 0"),
        Setting::Neuzip { k: 1, .. } => ("#3b6fd8", "NeuZip k = 1"),
        Setting::Neuzip { .. } => ("#17a2b8", "NeuZip k = 3"),
        Setting::Bitsnap { .. } => ("#2e8b57", "BitSnap (K clusters)"),
        Setting::NaiveUint8 => ("#c0504d", "naive uint8"),
    }
}

#[derive(Properties, PartialEq)]
struct ScatterProps {
    survey: Shared<Survey>,
    metric: Metric,
    /// The settings chosen above, drawn larger.
    current: Shared<Vec<Setting>>,
}

/// A log₁₀ y axis from 10^`y0` to 10^`y1` of a chart `h` high: a grid line and label a decade
/// (`py` places a value), the axis line and its `label`.
fn log_y_axis(y0: f64, y1: f64, py: &dyn Fn(f64) -> f64, h: f64, label: &str) -> Html {
    html! {
        <g class="axis y-axis">
            { for (y0 as i32..=y1 as i32).map(|e| {
                let y = py(10f64.powi(e));
                html! {
                    <g class="tick">
                        <line class="grid" x1={LEFT.to_string()} x2={(W - RIGHT).to_string()} y1={y.to_string()} y2={y.to_string()} />
                        <text x={(LEFT - 6.0).to_string()} y={(y + 4.0).to_string()} text-anchor="end">{ format!("1e{e}") }</text>
                    </g>
                }
            }) }
            <line class="axis-line" x1={LEFT.to_string()} x2={LEFT.to_string()} y1={TOP.to_string()} y2={(h - BOTTOM).to_string()} />
            <text class="axis-title" text-anchor="middle"
                  transform={format!("translate(14 {}) rotate(-90)", (TOP + h - BOTTOM) / 2.0)}>{ label.to_owned() }</text>
        </g>
    }
}

/// Size (bits a value, linear x) against error (log₁₀ y), one point a setting.
#[function_component(Scatter)]
fn scatter(p: &ScatterProps) -> Html {
    let hover = use_hover();
    let h = 340.0;
    let points: Vec<(&Measure, f64, f64)> = p
        .survey
        .all()
        .map(|m| (m, m.bits_per_value, p.metric.of(m).max(1e-12)))
        .collect();
    let x_max = points.iter().map(|p| p.1).fold(1.0, f64::max);
    let x_max = (x_max / 2.0).ceil() * 2.0;
    let logs = points.iter().map(|p| p.2.log10());
    let y0 = logs.clone().fold(f64::INFINITY, f64::min).floor();
    let y1 = logs.fold(f64::NEG_INFINITY, f64::max).ceil().max(y0 + 1.0);
    let px = |x: f64| LEFT + x / x_max * (W - LEFT - RIGHT);
    let py = |v: f64| TOP + (y1 - v.log10()) / (y1 - y0) * (h - BOTTOM - TOP);
    let mut legend: Vec<(String, String)> = Vec::new();
    for (m, _, _) in &points {
        let (c, name) = family(m.setting);
        if !legend.iter().any(|(n, _)| n == name) {
            legend.push((name.to_owned(), c.to_owned()));
        }
    }
    let step = if x_max > 16.0 { 4 } else { 2 };
    let summary = points
        .iter()
        .map(|(m, x, y)| {
            format!(
                "{}: {x:.2} bits, {}",
                setting_name(m.setting),
                number(*y, 3)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let body = html! {
        <>
            <desc>{ format!("Bits a value against {}: {summary}", p.metric.label()) }</desc>
            { log_y_axis(y0, y1, &py, h, p.metric.label()) }
            { for (0..=(x_max as usize)).step_by(step).map(|b| x_tick(px(b as f64), h, &b.to_string())) }
            { x_axis_title(h, "size: bits a value (the encoded stream ÷ values)") }
            <g class="marks">
                { for points.iter().map(|(m, x, y)| {
                    let (color, _) = family(m.setting);
                    let chosen = p.current.contains(&m.setting);
                    let tip = format!("{}: {x:.3} bits a value, {} {}", setting_name(m.setting), number(*y, 4),
                        if p.metric == Metric::MaxRel { "largest relative error" } else { "RMS error" });
                    html! {
                        <circle class={classes!("point", chosen.then_some("current"))} cx={px(*x).to_string()} cy={py(*y).to_string()}
                                r={if chosen { "7" } else { "4.5" }} fill={color} data-setting={setting_name(m.setting)}
                                data-bits={js_number(*x)} data-error={js_number(*y)} data-tip={tip.clone()}>
                            <title>{ tip }</title>
                        </circle>
                    }
                }) }
            </g>
        </>
    };
    let title = format!(
        "{} settings: bits a value against the {} (the settings chosen above drawn larger)",
        points.len(),
        if p.metric == Metric::MaxRel {
            "largest relative error"
        } else {
            "RMS error"
        }
    );
    figure(
        "lossy-curve",
        &title,
        &hover.text,
        h,
        (hover.onmouseover.clone(), hover.onmouseleave.clone(), None),
        body,
        &legend,
    )
}
