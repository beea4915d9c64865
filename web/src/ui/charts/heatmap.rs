//! Heatmap of rows × columns (tensors × bit positions, most significant bit left). Colour encodes
//! the value on a square-root scale, so the small flip ratios of exponent bits stay visible next
//! to the large ones of low mantissa bits; the legend shows the scale.

use crate::model::format::percent;
use crate::ui::charts::bars::Band;
use crate::ui::charts::frame::{figure, use_hover, RIGHT, W};
use crate::ui::shared::Shared;
use yew::prelude::*;

/// Props of [`Heatmap`].
#[derive(Properties, PartialEq)]
pub struct HeatmapProps {
    /// `data-chart` id.
    pub id: AttrValue,
    /// Caption.
    pub title: AttrValue,
    /// Row labels.
    pub rows: Shared<Vec<String>>,
    /// Column labels.
    pub cols: Shared<Vec<String>>,
    /// `values[row][col]`; `None` draws no cell.
    pub values: Shared<Vec<Vec<Option<f64>>>>,
    /// Column bands (bit regions) drawn above the grid.
    #[prop_or_default]
    pub bands: Option<Shared<Vec<Band>>>,
    /// X axis title.
    pub x_label: AttrValue,
    /// What a value is (for hover text and legend).
    pub value_label: AttrValue,
}

const NAME_W: f64 = 300.0;
const ROW_H: f64 = 14.0;
const HEAD: f64 = 24.0;
const FOOT: f64 = 84.0;

/// Colour of `t` in `[0, 1]` on a white → deep blue ramp.
fn ramp(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "rgb({},{},{})",
        lerp(247.0, 8.0),
        lerp(251.0, 48.0),
        lerp(255.0, 107.0)
    )
}

/// A heatmap.
#[function_component(Heatmap)]
pub fn heatmap(p: &HeatmapProps) -> Html {
    let hover = use_hover();
    let ncols = p.cols.len().max(1);
    let cell_w = (W - NAME_W - RIGHT) / ncols as f64;
    let grid_h = ROW_H * p.rows.len() as f64;
    let h = HEAD + grid_h + FOOT;
    let max = p
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0f64, f64::max);
    let scale = |v: f64| if max > 0.0 { (v / max).sqrt() } else { 0.0 };
    let bands = p.bands.as_ref().map(|b| {
        html! {
            <g class="bands">
                { for b.iter().map(|band| {
                    let x0 = NAME_W + band.from as f64 * cell_w;
                    let x1 = NAME_W + (band.to + 1) as f64 * cell_w;
                    html! {
                        <g class="band" data-band={band.label.clone()}>
                            <line x1={(x0 + 1.0).to_string()} x2={(x1 - 1.0).to_string()} y1={(HEAD - 4.0).to_string()}
                                  y2={(HEAD - 4.0).to_string()} style={format!("stroke:{}", band.color)} stroke-width="3" />
                            <text class="band-label" x={((x0 + x1) / 2.0).to_string()} y={(HEAD - 9.0).to_string()}
                                  text-anchor="middle" style={format!("fill:{}", band.color)}>{ &band.label }</text>
                        </g>
                    }
                }) }
            </g>
        }
    });
    let legend_x = NAME_W;
    let legend_w = W - NAME_W - RIGHT;
    let legend_y = HEAD + grid_h + 40.0;
    let steps = 40;
    let body = html! {
        <>
            { bands.unwrap_or_default() }
            <g class="marks">
                { for p.rows.iter().zip(p.values.iter()).enumerate().map(|(r, (name, row))| {
                    let y = HEAD + r as f64 * ROW_H;
                    let label: String = if name.chars().count() > 46 {
                        let tail: String = name.chars().rev().take(45).collect::<Vec<_>>().into_iter().rev().collect();
                        format!("…{tail}")
                    } else {
                        name.clone()
                    };
                    html! {
                        <g class="row">
                            <text class="row-label" x={(NAME_W - 6.0).to_string()} y={(y + ROW_H * 0.75).to_string()}
                                  text-anchor="end" data-tip={name.clone()}>{ label }</text>
                            { for row.iter().enumerate().filter_map(|(c, v)| v.map(|v| (c, v))).map(|(c, v)| {
                                let tip = format!("{name}, {}: {} {}", p.cols[c], p.value_label, percent(v));
                                html! {
                                    <rect class="cell" x={(NAME_W + c as f64 * cell_w).to_string()} y={y.to_string()}
                                          width={(cell_w - 1.0).max(0.5).to_string()} height={(ROW_H - 1.0).to_string()}
                                          fill={ramp(scale(v))} data-value={v.to_string()} data-tip={tip.clone()}>
                                        <title>{ tip }</title>
                                    </rect>
                                }
                            }) }
                        </g>
                    }
                }) }
            </g>
            { for p.cols.iter().enumerate().filter(|(c, _)| (ncols - 1 - c).is_multiple_of(ncols.div_ceil(24))).map(|(c, label)| html! {
                <text class="col-label" x={(NAME_W + (c as f64 + 0.5) * cell_w).to_string()}
                      y={(HEAD + grid_h + 12.0).to_string()} text-anchor="middle">{ label.clone() }</text>
            }) }
            <text class="axis-title" x={(NAME_W + legend_w / 2.0).to_string()} y={(HEAD + grid_h + 28.0).to_string()}
                  text-anchor="middle">{ p.x_label.to_string() }</text>
            <g class="color-legend">
                { for (0..steps).map(|i| {
                    let t = i as f64 / (steps - 1) as f64;
                    let v = t * t * max;
                    html! {
                        <rect x={(legend_x + i as f64 * legend_w / steps as f64).to_string()} y={legend_y.to_string()}
                              width={(legend_w / steps as f64 + 0.5).to_string()} height="10" fill={ramp(t)}
                              data-tip={format!("{} {}", p.value_label, percent(v))} />
                    }
                }) }
                <text x={legend_x.to_string()} y={(legend_y + 24.0).to_string()} text-anchor="start">{ "0%" }</text>
                <text x={(legend_x + legend_w * 0.5).to_string()} y={(legend_y + 24.0).to_string()}
                      text-anchor="middle">{ percent(0.25 * max) }</text>
                <text x={(legend_x + legend_w).to_string()} y={(legend_y + 24.0).to_string()}
                      text-anchor="end">{ percent(max) }</text>
                <text x={(legend_x - 6.0).to_string()} y={(legend_y + 9.0).to_string()} text-anchor="end">
                    { format!("{} (√ scale)", p.value_label) }
                </text>
            </g>
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
