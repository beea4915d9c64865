//! Horizontal bar chart: one row per name (changed fraction per tensor); the chart grows with the
//! number of rows.

use crate::model::format::percent;
use crate::model::scale::{ticks, Linear};
use crate::ui::charts::frame::{figure, use_hover, RIGHT, W};
use crate::ui::shared::Shared;
use yew::prelude::*;

/// One row.
#[derive(Debug, Clone, PartialEq)]
pub struct HBarRow {
    /// Row label.
    pub label: String,
    /// Fraction in `[0, 1]`.
    pub value: f64,
}

/// Props of [`HBarChart`].
#[derive(Properties, PartialEq)]
pub struct HBarProps {
    /// `data-chart` id.
    pub id: AttrValue,
    /// Caption.
    pub title: AttrValue,
    /// Rows, top to bottom.
    pub rows: Shared<Vec<HBarRow>>,
    /// X axis title.
    pub x_label: AttrValue,
    /// Bar colour.
    pub color: AttrValue,
}

const NAME_W: f64 = 300.0;
const ROW_H: f64 = 16.0;
const HEAD: f64 = 8.0;
const FOOT: f64 = 44.0;

/// A horizontal bar chart of fractions.
#[function_component(HBarChart)]
pub fn hbar_chart(p: &HBarProps) -> Html {
    let hover = use_hover();
    let h = HEAD + ROW_H * p.rows.len() as f64 + FOOT;
    let max = p.rows.iter().map(|r| r.value).fold(0.0f64, f64::max);
    let x_max = if max <= 0.0 {
        1.0
    } else {
        crate::model::scale::nice_domain(0.0, max, 5).1.min(1.0)
    };
    let x = Linear::new(0.0, x_max, NAME_W, W - RIGHT);
    let base = HEAD + ROW_H * p.rows.len() as f64;
    let body = html! {
        <>
            { for ticks(0.0, x_max, 5).into_iter().map(|t| {
                let px = x.map(t);
                html! {
                    <g class="tick">
                        <line class="grid" x1={px.to_string()} x2={px.to_string()} y1={HEAD.to_string()} y2={base.to_string()} />
                        <text x={px.to_string()} y={(base + 14.0).to_string()} text-anchor="middle">{ percent(t) }</text>
                    </g>
                }
            }) }
            <g class="marks">
                { for p.rows.iter().enumerate().map(|(i, r)| {
                    let y = HEAD + i as f64 * ROW_H;
                    let tip = format!("{}: {} changed", r.label, percent(r.value));
                    let label: String = if r.label.chars().count() > 46 {
                        let tail: String = r.label.chars().rev().take(45).collect::<Vec<_>>().into_iter().rev().collect();
                        format!("…{tail}")
                    } else {
                        r.label.clone()
                    };
                    html! {
                        <g class="row">
                            <text class="row-label" x={(NAME_W - 6.0).to_string()} y={(y + ROW_H * 0.7).to_string()}
                                  text-anchor="end" data-tip={tip.clone()}>{ label }</text>
                            <rect class="hit" x="0" y={y.to_string()} width={W.to_string()} height={ROW_H.to_string()}
                                  fill="transparent" data-tip={tip.clone()} />
                            <rect class="bar" x={NAME_W.to_string()} y={(y + 2.0).to_string()}
                                  width={(x.map(r.value.min(x_max)) - NAME_W).max(0.0).to_string()}
                                  height={(ROW_H - 4.0).to_string()} style={format!("fill:{}", p.color)}
                                  data-value={r.value.to_string()} data-tip={tip.clone()}>
                                <title>{ tip }</title>
                            </rect>
                        </g>
                    }
                }) }
            </g>
            <text class="axis-title" x={((NAME_W + W - RIGHT) / 2.0).to_string()} y={(h - 8.0).to_string()}
                  text-anchor="middle">{ p.x_label.to_string() }</text>
        </>
    };
    figure(
        &p.id,
        &p.title,
        &hover.text,
        h,
        (hover.onmouseover.clone(), hover.onmouseleave.clone(), None),
        body,
        &[],
    )
}
