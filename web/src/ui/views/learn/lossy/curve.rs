//! The lossy lesson's last part: size against error for every setting measured (NeuZip, BitSnap,
//! naive uint8), one point a setting on a log error axis, the chosen settings drawn larger, and
//! the points as a table.

use super::super::js_number;
use super::{head_row, LossyLesson, Msg};
use crate::model::format::number;
use crate::ui::charts::frame::{
    figure, log_y_axis, use_hover, x_axis_title, x_tick, BOTTOM, LEFT, RIGHT, TOP, W,
};
use crate::ui::shared::Shared;
use bitlens_lessons::lossy::{Measure, Setting, Survey};
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The error the curve plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Largest |x̂ − x| / |x|.
    MaxRel,
    /// √MSE.
    Rms,
}

impl Metric {
    pub(super) fn name(self) -> &'static str {
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

impl LossyLesson {
    /// The curve of every setting, the chosen ones drawn larger.
    pub(super) fn curve(&self, ctx: &Context<Self>, s: &Rc<Survey>) -> Html {
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
