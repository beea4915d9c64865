//! Vertical bar chart: one bar per category, optional shaded bands that group bars (sign /
//! exponent / mantissa bit regions), an optional reference line, and sparse x labels when there
//! are many bars.

use crate::model::format::number;
use crate::model::scale::{nice_domain, Linear};
use crate::ui::charts::frame::{
    figure, use_hover, x_axis_title, x_tick, y_axis, BOTTOM, LEFT, RIGHT, TOP, W,
};
use crate::ui::shared::Shared;
use yew::prelude::*;

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// X label.
    pub label: String,
    /// Height.
    pub value: f64,
    /// Fill colour.
    pub color: String,
    /// Hover text.
    pub tip: String,
}

/// A labelled background band over bars `from..=to`.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// Label drawn above the band.
    pub label: String,
    /// First bar.
    pub from: usize,
    /// Last bar (inclusive).
    pub to: usize,
    /// Tint.
    pub color: String,
}

/// One bar per equal-width bin of `counts` from `lo` to `hi`, labelled by the bin's centre and
/// filled with `color`; `tip` words a bin's hover text from its count and its range `[a, b)`.
pub fn binned_bars(
    lo: f64,
    hi: f64,
    counts: &[u64],
    color: &str,
    tip: impl Fn(u64, f64, f64) -> String,
) -> Vec<Bar> {
    let width = (hi - lo) / counts.len().max(1) as f64;
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (a, b) = (lo + i as f64 * width, lo + (i + 1) as f64 * width);
            Bar {
                label: number((a + b) / 2.0, 2),
                value: c as f64,
                color: color.to_owned(),
                tip: tip(c, a, b),
            }
        })
        .collect()
}

/// Props of [`BarChart`].
#[derive(Properties, PartialEq)]
pub struct BarProps {
    /// `data-chart` id (for tests and styling).
    pub id: AttrValue,
    /// Caption.
    pub title: AttrValue,
    /// The bars, left to right.
    pub bars: Shared<Vec<Bar>>,
    /// X axis title (with unit).
    pub x_label: AttrValue,
    /// Y axis title (with unit).
    pub y_label: AttrValue,
    /// Fixed y maximum (else from the data).
    #[prop_or_default]
    pub y_max: Option<f64>,
    /// Bands behind the bars.
    #[prop_or_default]
    pub bands: Option<Shared<Vec<Band>>>,
    /// A dashed horizontal line and its label.
    #[prop_or_default]
    pub reference: Option<(f64, AttrValue)>,
    /// Legend entries `(label, colour)`.
    #[prop_or_default]
    pub legend: Vec<(String, String)>,
    /// View-box height.
    #[prop_or(280.0)]
    pub height: f64,
}

/// A vertical bar chart.
#[function_component(BarChart)]
pub fn bar_chart(p: &BarProps) -> Html {
    let hover = use_hover();
    let h = p.height;
    let n = p.bars.len().max(1);
    let data_max = p.bars.iter().map(|b| b.value).fold(0.0f64, f64::max);
    let data_max = p.reference.as_ref().map_or(data_max, |r| data_max.max(r.0));
    let y_max = p.y_max.unwrap_or_else(|| {
        if data_max > 0.0 {
            nice_domain(0.0, data_max, 5).1
        } else {
            1.0
        }
    });
    let y = Linear::new(0.0, y_max, h - BOTTOM, TOP);
    let slot = (W - LEFT - RIGHT) / n as f64;
    let gap = (slot * 0.15).min(4.0);
    // Thin out x labels so they do not overlap (about 7 px per character).
    let longest = p
        .bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(1) as f64;
    let label_every = ((longest * 7.0 + 6.0) / slot).ceil().max(1.0) as usize;
    let bands = p.bands.as_ref().map(|b| {
        html! {
            <g class="bands">
                { for b.iter().map(|band| {
                    let x0 = LEFT + band.from as f64 * slot;
                    let x1 = LEFT + (band.to + 1) as f64 * slot;
                    html! {
                        <g class="band" data-band={band.label.clone()}>
                            <rect x={x0.to_string()} y={TOP.to_string()} width={(x1 - x0).to_string()}
                                  height={(h - BOTTOM - TOP).to_string()} style={format!("fill:{}", band.color)}
                                  fill-opacity="0.08" />
                            <text class="band-label" x={((x0 + x1) / 2.0).to_string()} y={(TOP - 8.0).to_string()}
                                  text-anchor="middle" style={format!("fill:{}", band.color)}>{ &band.label }</text>
                        </g>
                    }
                }) }
            </g>
        }
    });
    let reference = p.reference.as_ref().map(|(v, label)| {
        let ry = y.map(*v);
        html! {
            <g class="reference">
                <line x1={LEFT.to_string()} x2={(W - RIGHT).to_string()} y1={ry.to_string()}
                      y2={ry.to_string()} stroke-dasharray="4 3" />
                <text x={(W - RIGHT - 4.0).to_string()} y={(ry - 4.0).to_string()}
                      text-anchor="end">{ label.to_string() }</text>
            </g>
        }
    });
    let body = html! {
        <>
            { bands.unwrap_or_default() }
            { y_axis(&y, h, &p.y_label, 5) }
            <g class="marks">
                { for p.bars.iter().enumerate().map(|(i, b)| {
                    let x = LEFT + i as f64 * slot + gap / 2.0;
                    let top = y.map(b.value.clamp(0.0, y_max));
                    let tip = b.tip.clone();
                    html! {
                        <rect class="bar" x={x.to_string()} y={top.to_string()}
                              width={(slot - gap).max(0.5).to_string()}
                              height={(h - BOTTOM - top).max(0.0).to_string()}
                              style={format!("fill:{}", b.color)} data-value={b.value.to_string()}
                              data-tip={tip.clone()}>
                            <title>{ tip }</title>
                        </rect>
                    }
                }) }
                // Transparent full-height hit areas so short bars are easy to hover.
                { for p.bars.iter().enumerate().map(|(i, b)| html! {
                    <rect class="hit" x={(LEFT + i as f64 * slot).to_string()} y={TOP.to_string()}
                          width={slot.to_string()} height={(h - BOTTOM - TOP).to_string()}
                          fill="transparent" data-tip={b.tip.clone()} />
                }) }
            </g>
            { reference.unwrap_or_default() }
            { for p.bars.iter().enumerate().filter(|(i, _)| i % label_every == 0).map(|(i, b)| {
                x_tick(LEFT + (i as f64 + 0.5) * slot, h, &b.label)
            }) }
            { x_axis_title(h, &p.x_label) }
        </>
    };
    figure(
        &p.id,
        &p.title,
        &hover.text,
        h,
        (hover.onmouseover.clone(), hover.onmouseleave.clone(), None),
        body,
        &p.legend,
    )
}
