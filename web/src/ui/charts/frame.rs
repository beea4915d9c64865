//! What every chart shares: the `<figure>` with caption and hover readout, the y axis with grid
//! lines, axis titles, the legend, and the delegated hover handler.

use crate::model::format::number;
use crate::model::scale::{ticks, Linear};
use wasm_bindgen::JsCast;
use web_sys::Element;
use yew::prelude::*;

/// Width of every chart's view box.
pub const W: f64 = 720.0;
/// Left margin (y tick labels and axis title).
pub const LEFT: f64 = 64.0;
/// Right margin.
pub const RIGHT: f64 = 16.0;
/// Top margin (band labels).
pub const TOP: f64 = 24.0;
/// Bottom margin (x tick labels and axis title).
pub const BOTTOM: f64 = 52.0;

/// A hover readout: state plus the handlers that fill it from `data-tip` attributes.
pub struct Hover {
    /// Current text.
    pub text: Option<String>,
    /// Put on the `<svg>`: reads `data-tip` of the element under the pointer.
    pub onmouseover: Callback<MouseEvent>,
    /// Put on the `<svg>`: clears the readout.
    pub onmouseleave: Callback<MouseEvent>,
    /// Sets the readout directly (charts that compute the tip from the pointer position).
    pub set: UseStateHandle<Option<String>>,
}

/// The hover hook for a chart.
#[hook]
pub fn use_hover() -> Hover {
    let state = use_state(|| None::<String>);
    let s = state.clone();
    let onmouseover = Callback::from(move |e: MouseEvent| {
        let tip = e
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .and_then(|el| el.get_attribute("data-tip"));
        if tip.is_some() {
            s.set(tip);
        }
    });
    let s = state.clone();
    let onmouseleave = Callback::from(move |_| s.set(None));
    Hover {
        text: (*state).clone(),
        onmouseover,
        onmouseleave,
        set: state,
    }
}

/// The figure around a chart: caption with the hover readout, the SVG, and the legend.
pub fn figure(
    id: &str,
    title: &str,
    hover: &Option<String>,
    height: f64,
    svg_handlers: (
        Callback<MouseEvent>,
        Callback<MouseEvent>,
        Option<Callback<MouseEvent>>,
    ),
    body: Html,
    legend: &[(String, String)],
) -> Html {
    let (onmouseover, onmouseleave, onmousemove) = svg_handlers;
    html! {
        <figure class="chart" part="chart" data-chart={id.to_owned()}>
            <figcaption>
                <span class="chart-title">{ title }</span>
                <span class="hover">{ hover.clone().unwrap_or_else(|| "hover for values".into()) }</span>
            </figcaption>
            <svg viewBox={format!("0 0 {W} {height}")} preserveAspectRatio="xMidYMid meet"
                 role="img" aria-label={title.to_owned()}
                 {onmouseover} {onmouseleave} onmousemove={onmousemove}>
                { body }
            </svg>
            if !legend.is_empty() {
                <div class="legend">
                    { for legend.iter().map(|(label, color)| html! {
                        <span class="legend-item">
                            <span class="swatch" style={format!("background:{color}")}></span>
                            { label }
                        </span>
                    }) }
                </div>
            }
        </figure>
    }
}

/// The y axis: grid lines and tick labels for `scale`, and the rotated axis title.
pub fn y_axis(scale: &Linear, height: f64, label: &str, tick_count: usize) -> Html {
    let (lo, hi) = if scale.d0 <= scale.d1 {
        (scale.d0, scale.d1)
    } else {
        (scale.d1, scale.d0)
    };
    let mid = (TOP + height - BOTTOM) / 2.0;
    html! {
        <g class="axis y-axis">
            { for ticks(lo, hi, tick_count).into_iter().map(|t| {
                let y = scale.map(t);
                html! {
                    <g class="tick">
                        <line class="grid" x1={LEFT.to_string()} x2={(W - RIGHT).to_string()}
                              y1={y.to_string()} y2={y.to_string()} />
                        <text x={(LEFT - 6.0).to_string()} y={(y + 4.0).to_string()}
                              text-anchor="end">{ number(t, 3) }</text>
                    </g>
                }
            }) }
            <line class="axis-line" x1={LEFT.to_string()} x2={LEFT.to_string()}
                  y1={TOP.to_string()} y2={(height - BOTTOM).to_string()} />
            <text class="axis-title" text-anchor="middle"
                  transform={format!("translate(14 {mid}) rotate(-90)")}>{ label }</text>
        </g>
    }
}

/// The x axis line and its title.
pub fn x_axis_title(height: f64, label: &str) -> Html {
    let mid = (LEFT + W - RIGHT) / 2.0;
    html! {
        <g class="axis x-axis">
            <line class="axis-line" x1={LEFT.to_string()} x2={(W - RIGHT).to_string()}
                  y1={(height - BOTTOM).to_string()} y2={(height - BOTTOM).to_string()} />
            <text class="axis-title" x={mid.to_string()} y={(height - 8.0).to_string()}
                  text-anchor="middle">{ label }</text>
        </g>
    }
}

/// An x tick label at `x`.
pub fn x_tick(x: f64, height: f64, label: &str) -> Html {
    html! {
        <g class="tick">
            <line class="tick-mark" x1={x.to_string()} x2={x.to_string()}
                  y1={(height - BOTTOM).to_string()} y2={(height - BOTTOM + 4.0).to_string()} />
            <text x={x.to_string()} y={(height - BOTTOM + 16.0).to_string()}
                  text-anchor="middle">{ label.to_owned() }</text>
        </g>
    }
}

/// A log₁₀ y axis from 10^`y0` to 10^`y1` of a chart `h` high: a grid line and label a decade
/// (`py` places a value), the axis line and its `label`.
pub fn log_y_axis(y0: f64, y1: f64, py: &dyn Fn(f64) -> f64, h: f64, label: &str) -> Html {
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
