//! The lossy lesson's Inshrinkerator part (paper 002 §4.4, Table 7): the non-uniform bins of
//! Algorithm 2 (log histogram, then weighted k-means++) against evenly spaced bins on the lesson's
//! tensor — where each quantizer's centroids sit over the values' histogram, the relative L2 and
//! largest error of both at 4..32 bins, and the fewest bins each needs for the same error beside
//! the paper's 2–4× claim. The figures come from `bitlens_lessons::bins::bins_lesson`, run in
//! a worker of the lesson's own (a `WorkerRequest::InshrinkBins`), so the inshrink crate stays
//! out of the page's module; changing the bin count only redraws, changing `β` asks again.

use super::super::{claim, js_number};
use crate::model::format::{count, number};
use crate::ui::charts::frame::{
    figure, log_y_axis, use_hover, x_axis_title, x_tick, BOTTOM, LEFT, RIGHT, TOP, W,
};
use crate::ui::jobs::to_ref;
use crate::ui::loader::Source;
use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event as WorkerEvent, Request};
use bitlens_protocol::{BinsFit, BinsReport, BinsRow, JobResult};
use bitlens_tensors::Dtype;
use std::rc::Rc;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// The fewest bins the part offers (the configuration search's range, paper §5).
pub const MIN_BINS: u32 = 4;
/// The most bins it offers.
pub const MAX_BINS: u32 = 32;
/// The `β`s offered: frequency against magnitude in a histogram bucket's k-means weight.
pub const BALANCES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

const NONUNIFORM: &str = "#2e8b57";
const UNIFORM: &str = "#c0504d";

/// Props of [`Bins`].
#[derive(Properties, PartialEq)]
pub struct BinsProps {
    /// The file holding the tensor (a local file or a URL).
    pub file: Source,
    /// Offset of its first value.
    pub offset: u64,
    /// Bytes of the values measured (the lesson's first values).
    pub bytes: u64,
    /// Its dtype (f32, f16, bf16).
    pub dtype: Dtype,
    /// Its name, for the captions.
    pub name: String,
    /// The bin count shown.
    pub bins: u32,
    /// The non-uniform quantizer's `β`.
    pub balance: f64,
    /// Another bin count chosen.
    pub on_bins: Callback<u32>,
    /// Another `β` chosen.
    pub on_balance: Callback<f64>,
}

impl BinsProps {
    /// What the worker's figures depend on.
    fn key(&self) -> (Source, u64, u64, Dtype, u64) {
        (
            self.file.clone(),
            self.offset,
            self.bytes,
            self.dtype,
            self.balance.to_bits(),
        )
    }
}

/// Messages of [`Bins`].
pub enum Msg {
    /// The worker reported.
    Worker(WorkerEvent),
}

/// The part's state: its worker and the figures of the current tensor and `β`.
pub struct Bins {
    worker: Option<WorkerHandle>,
    /// Counts the requests: an answer to an earlier one is dropped.
    task: u32,
    report: Option<Rc<BinsReport>>,
    error: Option<String>,
}

impl Bins {
    /// Asks the worker for the figures of the props' tensor and `β`.
    fn request(&mut self, ctx: &Context<Self>) {
        let p = ctx.props();
        self.task += 1;
        self.report = None;
        self.error = None;
        if self.worker.is_none() {
            match WorkerHandle::spawn(
                "worker.js",
                "lesson worker",
                ctx.link().callback(Msg::Worker),
            ) {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        if let Some(w) = &self.worker {
            let posted = w.post(&Request::InshrinkBins {
                task: self.task,
                file: to_ref(&p.file),
                offset: p.offset,
                bytes: p.bytes,
                dtype: p.dtype,
                balance: p.balance,
            });
            if let Err(e) = posted {
                self.error = Some(e);
            }
        }
    }
}

impl Component for Bins {
    type Message = Msg;
    type Properties = BinsProps;

    fn create(ctx: &Context<Self>) -> Self {
        let mut me = Bins {
            worker: None,
            task: 0,
            report: None,
            error: None,
        };
        me.request(ctx);
        me
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &Self::Properties) -> bool {
        if ctx.props().key() != old.key() {
            self.request(ctx);
        }
        true
    }

    fn update(&mut self, _ctx: &Context<Self>, msg: Msg) -> bool {
        let Msg::Worker(e) = msg;
        match e {
            WorkerEvent::Done {
                task,
                result: JobResult::Bins(r),
                ..
            } if task == self.task => {
                self.report = Some(Rc::new(*r));
                true
            }
            WorkerEvent::Failed { task, message } if task.is_none_or(|t| t == self.task) => {
                if task.is_none() {
                    // A crashed worker does not answer again: the next request starts another.
                    self.worker = None;
                }
                self.error = Some(message);
                true
            }
            _ => false,
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let p = ctx.props();
        let on_bins = p.on_bins.reform(|e: InputEvent| {
            let i: HtmlInputElement = e.target_unchecked_into();
            i.value().parse().unwrap_or(MIN_BINS)
        });
        let on_balance = p.on_balance.reform(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            s.value().parse().unwrap_or(0.5)
        });
        let controls = html! {
            <div class="controls">
                <label class="control">{ "Bins " }
                    <input type="range" id="inshrink-bins" min={MIN_BINS.to_string()} max={MAX_BINS.to_string()}
                           step="1" value={p.bins.to_string()} oninput={on_bins}
                           aria-valuetext={format!("{} bins", p.bins)} />
                    <output for="inshrink-bins" id="inshrink-bins-value">{ p.bins }</output>
                </label>
                <label class="control">{ "β (frequency against magnitude) " }
                    <select id="inshrink-beta" onchange={on_balance}>
                        { for BALANCES.iter().map(|&b| html! {
                            <option value={b.to_string()} selected={b == p.balance}>{ b.to_string() }</option>
                        }) }
                    </select>
                </label>
            </div>
        };
        let body = match (&self.report, &self.error) {
            (_, Some(e)) => html! { <p class="error-text" role="alert">{ e }</p> },
            (None, None) => html! {
                <p class="note" id="inshrink-progress" aria-live="polite">
                    { "Fitting non-uniform and uniform bins at every count in a worker…" }
                </p>
            },
            (Some(r), None) => figures(r, p),
        };
        html! {
            <section class="lossy-part" id="lossy-inshrink" aria-labelledby="lossy-inshrink-title"
                     data-bins={p.bins.to_string()} data-beta={p.balance.to_string()}
                     data-ready={self.report.is_some().to_string()}
                     data-values={self.report.as_ref().map_or(String::new(), |r| r.values.to_string())}>
                <h3 id="lossy-inshrink-title">{ "Inshrinkerator: non-uniform bins against uniform bins" }</h3>
                <p>{ "Uniform quantization spreads its bins evenly from the smallest value to the largest: most weights sit near zero, so most bins cover values that hardly occur. Inshrinkerator first groups the values into a log histogram (buckets 1 % wide), then runs weighted k-means on the buckets, seeded by k-means++: the bins go where the values are. A bucket's weight mixes its frequency with its magnitude by β — β = 1 chases the dense middle, lower β keeps bins for the rare large weights." }</p>
                { controls }
                { body }
            </section>
        }
    }
}

/// Everything drawn from the worker's figures at the chosen bin count.
fn figures(r: &Rc<BinsReport>, p: &BinsProps) -> Html {
    let (Some(row), Some(fewest)) = (r.row(p.bins), r.fewest(p.bins)) else {
        return html! { <p class="error-text" role="alert">{ format!("no figures for {} bins", p.bins) }</p> };
    };
    let uniform_needs = fewest.uniform.map_or_else(
        || format!("more than {}", r.uniform_limit),
        |u| u.to_string(),
    );
    let ratio = fewest
        .uniform
        .map(|u| f64::from(u) / f64::from(fewest.nonuniform));
    let measured = html! {
        <span id="inshrink-claim" data-bins={fewest.bins.to_string()} data-error={js_number(fewest.error)}
              data-nonuniform={fewest.nonuniform.to_string()}
              data-uniform={fewest.uniform.map_or(String::new(), |u| u.to_string())}
              data-ratio={ratio.map_or(String::new(), js_number)}>
            { format!("for the relative L2 error {} that {} non-uniform bins reach on {}, uniform bins need {} — {}.",
                number(fewest.error, 4), fewest.nonuniform, p.name, uniform_needs,
                ratio.map_or_else(|| "the uniform quantizer does not get there".into(), |x| format!("{x:.2}× as many"))) }
        </span>
    };
    html! {
        <>
            { claim(
                "Inshrinkerator §9, Table 7:",
                "to meet the same quality threshold (no pruning), quantizers with evenly spaced bins need 2–4× more quantization bins than Inshrinkerator's non-uniform ones.",
                measured,
            ) }
            <p class="muted" id="inshrink-scope">{ format!("Measured on {} values of {} ({}, the values the parts above measure), β = {}: plain quantization to the nearest centroid, no pruning or protection; relative L2 error ‖x − q(x)‖ / ‖x‖. The paper compares against its Adaptive baseline (uniform bins over chosen ranges); here the baseline is plain uniform bins from the minimum to the maximum.",
                count(r.values), p.name, p.dtype, js_number(r.balance)) }</p>
            <Placement report={r.clone()} bins={p.bins} />
            <div class="lesson-grid">
                <Curve report={r.clone()} bins={p.bins} metric={Metric::RelL2} />
                <Curve report={r.clone()} bins={p.bins} metric={Metric::MaxAbs} />
            </div>
            <figure class="costs" data-chart="inshrink-figures">
                <figcaption><span class="chart-title">{ format!("{} bins, non-uniform against uniform", p.bins) }</span></figcaption>
                <table id="inshrink-figures" aria-label="Error of non-uniform and uniform bins">
                    <thead><tr>
                        <th scope="col"></th>
                        <th scope="col">{ "relative L2 error" }</th>
                        <th scope="col">{ "largest error |x − q(x)|" }</th>
                        <th scope="col">{ "fewest bins for the non-uniform error" }</th>
                    </tr></thead>
                    <tbody>
                        { fit_row("nonuniform", "non-uniform (Algorithm 2)", &row.nonuniform, fewest.nonuniform.to_string()) }
                        { fit_row("uniform", "uniform", &row.uniform, uniform_needs) }
                    </tbody>
                </table>
            </figure>
            <details>
                <summary>{ "Fewest bins for the same error, every count" }</summary>
                <table class="curve-table" id="inshrink-fewest" aria-label="Fewest bins of each quantizer for the same error">
                    <thead><tr>
                        <th scope="col">{ "non-uniform bins" }</th>
                        <th scope="col">{ "their relative L2 error" }</th>
                        <th scope="col">{ "uniform bins for it" }</th>
                        <th scope="col">{ "ratio" }</th>
                    </tr></thead>
                    <tbody>
                        { for r.fewest.iter().map(|f| html! {
                            <tr data-bins={f.bins.to_string()}>
                                <th scope="row">{ f.nonuniform }</th>
                                <td class="num">{ number(f.error, 4) }</td>
                                <td class="num">{ f.uniform.map_or_else(|| format!("> {}", r.uniform_limit), |u| u.to_string()) }</td>
                                <td class="num">{ f.uniform.map_or_else(|| "—".into(), |u| format!("{:.2}×", f64::from(u) / f64::from(f.nonuniform))) }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
            </details>
        </>
    }
}

fn fit_row(id: &str, what: &str, f: &BinsFit, fewest: String) -> Html {
    html! {
        <tr data-quantizer={id.to_owned()} data-rel-l2={js_number(f.rel_l2)} data-max-abs={js_number(f.max_abs)}
            data-centroids={f.centroids.len().to_string()}>
            <th scope="row">{ what }</th>
            <td class="num">{ number(f.rel_l2, 4) }</td>
            <td class="num">{ number(f.max_abs, 4) }</td>
            <td class="num">{ fewest }</td>
        </tr>
    }
}

#[derive(Properties, PartialEq)]
struct ChartProps {
    report: Rc<BinsReport>,
    bins: u32,
}

/// The values' histogram (log counts) with each quantizer's centroids at the chosen count: the
/// non-uniform ones as marks above the axis, the uniform ones below.
#[function_component(Placement)]
fn placement(p: &ChartProps) -> Html {
    let hover = use_hover();
    let r = &p.report;
    let Some(row) = r.row(p.bins) else {
        return html! {};
    };
    let h = 300.0;
    let base = h - BOTTOM - 26.0;
    let (lo, hi) = (r.lo, if r.hi > r.lo { r.hi } else { r.lo + 1.0 });
    let px = |x: f64| LEFT + (x - lo) / (hi - lo) * (W - LEFT - RIGHT);
    let top = r.histogram.iter().copied().max().unwrap_or(1).max(1) as f64;
    let py = |c: u64| base - (1.0 + c as f64).log10() / (1.0 + top).log10() * (base - TOP);
    let bar_w = (W - LEFT - RIGHT) / r.histogram.len().max(1) as f64;
    let marks = |f: &BinsFit, y0: f64, y1: f64, color: &str, who: &str| -> Html {
        html! {
            { for f.centroids.iter().map(|&c| {
                let tip = format!("{who} centroid {}", number(f64::from(c), 4));
                html! {
                    <line class={format!("centroid {}", who.replace(' ', "-"))} x1={px(f64::from(c)).to_string()} x2={px(f64::from(c)).to_string()}
                          y1={y0.to_string()} y2={y1.to_string()} stroke={color.to_owned()} stroke-width="2"
                          data-value={js_number(f64::from(c))} data-tip={tip.clone()}>
                        <title>{ tip }</title>
                    </line>
                }
            }) }
        }
    };
    let width = (hi - lo) / r.histogram.len().max(1) as f64;
    let body = html! {
        <>
            <desc>{ format!("Histogram of {} values from {} to {}; {} non-uniform centroids: {}; {} uniform centroids: {}",
                r.values, number(lo, 3), number(hi, 3),
                row.nonuniform.centroids.len(), list(&row.nonuniform.centroids),
                row.uniform.centroids.len(), list(&row.uniform.centroids)) }</desc>
            <g class="marks">
                { for r.histogram.iter().enumerate().map(|(i, &c)| {
                    let x = LEFT + i as f64 * bar_w;
                    let tip = format!("{} values in [{}, {})", count(c), number(lo + i as f64 * width, 3), number(lo + (i + 1) as f64 * width, 3));
                    html! {
                        <rect class="bar" x={x.to_string()} y={py(c).to_string()} width={(bar_w * 0.9).max(0.5).to_string()}
                              height={(base - py(c)).to_string()} fill="#9aa7b8" data-tip={tip.clone()}>
                            <title>{ tip }</title>
                        </rect>
                    }
                }) }
            </g>
            <g class="centroids">
                { marks(&row.nonuniform, TOP, base, NONUNIFORM, "non-uniform") }
                { marks(&row.uniform, base + 4.0, base + 22.0, UNIFORM, "uniform") }
            </g>
            <line class="axis-line" x1={LEFT.to_string()} x2={(W - RIGHT).to_string()} y1={base.to_string()} y2={base.to_string()} />
            <text class="axis-title" text-anchor="middle"
                  transform={format!("translate(14 {}) rotate(-90)", (TOP + base) / 2.0)}>{ "values (log scale)" }</text>
            { for (0..=4).map(|i| {
                let x = lo + (hi - lo) * f64::from(i) / 4.0;
                x_tick(px(x), h, &number(x, 3))
            }) }
            { x_axis_title(h, "weight value") }
        </>
    };
    let legend = [
        (
            "non-uniform centroids (above the axis)".to_owned(),
            NONUNIFORM.to_owned(),
        ),
        ("uniform centroids (below)".to_owned(), UNIFORM.to_owned()),
    ];
    figure(
        "inshrink-placement",
        &format!("Where {} bins sit over the values", p.bins),
        &hover.text,
        h,
        (hover.onmouseover.clone(), hover.onmouseleave.clone(), None),
        body,
        &legend,
    )
}

/// Numbers, three significant digits, comma-separated.
fn list(v: &[f32]) -> String {
    v.iter()
        .map(|&c| number(f64::from(c), 3))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error a [`Curve`] plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    RelL2,
    MaxAbs,
}

impl Metric {
    fn of(self, f: &BinsFit) -> f64 {
        match self {
            Metric::RelL2 => f.rel_l2,
            Metric::MaxAbs => f.max_abs,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::RelL2 => "relative L2 error (log scale)",
            Metric::MaxAbs => "largest error |x − q(x)| (log scale)",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Metric::RelL2 => "inshrink-curve-l2",
            Metric::MaxAbs => "inshrink-curve-max",
        }
    }
}

#[derive(Properties, PartialEq)]
struct CurveProps {
    report: Rc<BinsReport>,
    bins: u32,
    metric: Metric,
}

/// One error of both quantizers against the bin count (log y), the chosen count marked.
#[function_component(Curve)]
fn curve(p: &CurveProps) -> Html {
    let hover = use_hover();
    let h = 280.0;
    let r = &p.report;
    let ys = r
        .rows
        .iter()
        .flat_map(|row| [p.metric.of(&row.nonuniform), p.metric.of(&row.uniform)])
        .filter(|&v| v > 0.0 && v.is_finite());
    let y0 = ys.clone().fold(f64::INFINITY, f64::min).log10().floor();
    let y1 = ys.fold(f64::NEG_INFINITY, f64::max).log10().ceil();
    let (y0, y1) = if y0.is_finite() && y1.is_finite() {
        (y0, y1.max(y0 + 1.0))
    } else {
        (-3.0, 0.0)
    };
    let px = |b: u32| {
        LEFT + f64::from(b - MIN_BINS) / f64::from(MAX_BINS - MIN_BINS) * (W - LEFT - RIGHT)
    };
    let py = |v: f64| TOP + (y1 - v.max(1e-300).log10()) / (y1 - y0) * (h - BOTTOM - TOP);
    let line = |pick: fn(&BinsRow) -> &BinsFit, color: &str, who: &str| {
        let points: Vec<String> = r
            .rows
            .iter()
            .map(|row| format!("{},{}", px(row.bins), py(p.metric.of(pick(row)))))
            .collect();
        html! {
            <g class={format!("series {}", who)}>
                <polyline points={points.join(" ")} fill="none" stroke={color.to_owned()} stroke-width="2" />
                { for r.rows.iter().map(|row| {
                    let v = p.metric.of(pick(row));
                    let chosen = row.bins == p.bins;
                    let tip = format!("{who}, {} bins: {}", row.bins, number(v, 4));
                    html! {
                        <circle class={classes!("point", chosen.then_some("current"))} cx={px(row.bins).to_string()} cy={py(v).to_string()}
                                r={if chosen { "6" } else { "3" }} fill={color.to_owned()}
                                data-bins={row.bins.to_string()} data-error={js_number(v)} data-quantizer={who.to_owned()} data-tip={tip.clone()}>
                            <title>{ tip }</title>
                        </circle>
                    }
                }) }
            </g>
        }
    };
    let summary = r
        .rows
        .iter()
        .map(|row| {
            format!(
                "{} bins: non-uniform {}, uniform {}",
                row.bins,
                number(p.metric.of(&row.nonuniform), 3),
                number(p.metric.of(&row.uniform), 3)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let body = html! {
        <>
            <desc>{ format!("{} against the bin count: {summary}", p.metric.label()) }</desc>
            { log_y_axis(y0, y1, &py, h, p.metric.label()) }
            { for (MIN_BINS..=MAX_BINS).step_by(4).map(|b| x_tick(px(b), h, &b.to_string())) }
            { x_axis_title(h, "bins") }
            <line class="current-bins" x1={px(p.bins).to_string()} x2={px(p.bins).to_string()}
                  y1={TOP.to_string()} y2={(h - BOTTOM).to_string()} stroke="#888" stroke-dasharray="4 3" />
            { line(|row| &row.nonuniform, NONUNIFORM, "non-uniform") }
            { line(|row| &row.uniform, UNIFORM, "uniform") }
        </>
    };
    let legend = [
        ("non-uniform".to_owned(), NONUNIFORM.to_owned()),
        ("uniform".to_owned(), UNIFORM.to_owned()),
    ];
    figure(
        p.metric.id(),
        &format!("{} against bins, {} marked", p.metric.label(), p.bins),
        &hover.text,
        h,
        (hover.onmouseover.clone(), hover.onmouseleave.clone(), None),
        body,
        &legend,
    )
}
