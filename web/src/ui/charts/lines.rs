//! Line chart: series over a shared numeric x axis, linear or log₁₀ y axis. Hovering anywhere over
//! the plot shows every series' value at the nearest x.

use crate::model::format::number;
use crate::model::scale::{nice_domain, ticks, Linear};
use crate::ui::charts::frame::{
    figure, use_hover, x_axis_title, x_tick, y_axis, BOTTOM, LEFT, RIGHT, TOP, W,
};
use crate::ui::shared::Shared;
use wasm_bindgen::JsCast;
use web_sys::Element;
use yew::prelude::*;

/// One line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// Points `(x, y)` in increasing x.
    pub points: Vec<(f64, f64)>,
}

/// Props of [`LineChart`].
#[derive(Properties, PartialEq)]
pub struct LineProps {
    /// `data-chart` id.
    pub id: AttrValue,
    /// Caption.
    pub title: AttrValue,
    /// The series.
    pub series: Shared<Vec<Series>>,
    /// X axis title (with unit).
    pub x_label: AttrValue,
    /// Y axis title (with unit).
    pub y_label: AttrValue,
    /// Fixed y range (else from the data, from 0).
    #[prop_or_default]
    pub y_range: Option<(f64, f64)>,
    /// Log₁₀ y axis (values ≤ `log_floor` are drawn at the floor).
    #[prop_or_default]
    pub log_y: bool,
    /// Smallest value drawn on a log axis.
    #[prop_or(1e-6)]
    pub log_floor: f64,
    /// Labels for integer x positions (e.g. step names); numeric ticks otherwise.
    #[prop_or_default]
    pub x_names: Option<Shared<Vec<String>>>,
    /// View-box height.
    #[prop_or(300.0)]
    pub height: f64,
}

/// A line chart.
#[function_component(LineChart)]
pub fn line_chart(p: &LineProps) -> Html {
    let hover = use_hover();
    let h = p.height;
    let all = || p.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(x, _)| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x0.is_finite() { (x0, x1) } else { (0.0, 1.0) };
    let ty = |v: f64| {
        if p.log_y {
            v.max(p.log_floor).log10()
        } else {
            v
        }
    };
    let (y0, y1) = match p.y_range {
        Some((a, b)) => (ty(a), ty(b)),
        None if p.log_y => {
            let hi = all().map(|&(_, y)| ty(y)).fold(f64::NEG_INFINITY, f64::max);
            let lo = all().map(|&(_, y)| ty(y)).fold(f64::INFINITY, f64::min);
            if hi.is_finite() {
                (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
            } else {
                (ty(p.log_floor), 0.0)
            }
        }
        None => {
            let hi = all().map(|&(_, y)| y).fold(0.0f64, f64::max);
            nice_domain(0.0, hi.max(1e-12), 5)
        }
    };
    let y = Linear::new(y0, y1, h - BOTTOM, TOP);
    let x = Linear::new(x0, x1, LEFT + 8.0, W - RIGHT - 8.0);
    let y_axis_html = if p.log_y {
        let mid = (TOP + h - BOTTOM) / 2.0;
        html! {
            <g class="axis y-axis">
                { for (y0.ceil() as i32..=y1.floor() as i32).map(|e| {
                    let py = y.map(e as f64);
                    html! {
                        <g class="tick">
                            <line class="grid" x1={LEFT.to_string()} x2={(W - RIGHT).to_string()}
                                  y1={py.to_string()} y2={py.to_string()} />
                            <text x={(LEFT - 6.0).to_string()} y={(py + 4.0).to_string()}
                                  text-anchor="end">{ number(10f64.powi(e), 1) }</text>
                        </g>
                    }
                }) }
                <line class="axis-line" x1={LEFT.to_string()} x2={LEFT.to_string()}
                      y1={TOP.to_string()} y2={(h - BOTTOM).to_string()} />
                <text class="axis-title" text-anchor="middle"
                      transform={format!("translate(14 {mid}) rotate(-90)")}>{ format!("{} (log scale)", p.y_label) }</text>
            </g>
        }
    } else {
        y_axis(&y, h, &p.y_label, 5)
    };
    let x_ticks = match &p.x_names {
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(i, n)| x_tick(x.map(i as f64), h, n))
            .collect::<Html>(),
        None => ticks(x0, x1, 8)
            .into_iter()
            .map(|t| x_tick(x.map(t), h, &number(t, 3)))
            .collect::<Html>(),
    };
    // Hover: nearest x of the first series, values of every series there.
    let onmousemove = {
        let set = hover.set.clone();
        let series = p.series.clone();
        let names = p.x_names.clone();
        let y_label = p.y_label.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(el) = e
                .current_target()
                .and_then(|t| t.dyn_into::<Element>().ok())
            else {
                return;
            };
            let rect = el.get_bounding_client_rect();
            if rect.width() <= 0.0 {
                return;
            }
            let px = (e.client_x() as f64 - rect.left()) * W / rect.width();
            let Some(first) = series.first() else { return };
            let data_x = x0 + (px - x.r0) / (x.r1 - x.r0) * (x1 - x0);
            let Some(&(nx, _)) = first
                .points
                .iter()
                .min_by(|a, b| (a.0 - data_x).abs().total_cmp(&(b.0 - data_x).abs()))
            else {
                return;
            };
            let at = match &names {
                Some(n) => n.get(nx as usize).cloned().unwrap_or_default(),
                None => format!("x = {}", number(nx, 4)),
            };
            let values: Vec<String> = series
                .iter()
                .filter_map(|s| {
                    s.points
                        .iter()
                        .find(|(px, _)| *px == nx)
                        .map(|(_, v)| format!("{} {}", s.name, number(*v, 3)))
                })
                .collect();
            set.set(Some(format!("{at} — {y_label}: {}", values.join(", "))));
        })
    };
    let body = html! {
        <>
            { y_axis_html }
            <g class="marks">
                { for p.series.iter().map(|s| {
                    let pts: Vec<String> = s.points.iter()
                        .map(|&(px, py)| format!("{:.1},{:.1}", x.map(px), y.map(ty(py).clamp(y0.min(y1), y0.max(y1)))))
                        .collect();
                    let dots = s.points.len() <= 40;
                    html! {
                        <g class="series" data-series={s.name.clone()} data-points={s.points.len().to_string()}>
                            <polyline points={pts.join(" ")} fill="none" style={format!("stroke:{}", s.color)} stroke-width="1.5" />
                            if dots {
                                { for s.points.iter().map(|&(px, py)| html! {
                                    <circle cx={format!("{:.1}", x.map(px))}
                                            cy={format!("{:.1}", y.map(ty(py).clamp(y0.min(y1), y0.max(y1))))}
                                            r="2.5" style={format!("fill:{}", s.color)}>
                                        <title>{ format!("{}: {}", s.name, number(py, 3)) }</title>
                                    </circle>
                                }) }
                            }
                        </g>
                    }
                }) }
            </g>
            { x_ticks }
            { x_axis_title(h, &p.x_label) }
        </>
    };
    let legend: Vec<(String, String)> = p
        .series
        .iter()
        .map(|s| (s.name.clone(), s.color.clone()))
        .collect();
    figure(
        &p.id,
        &p.title,
        &hover.text,
        h,
        (
            Callback::noop(),
            hover.onmouseleave.clone(),
            Some(onmousemove),
        ),
        body,
        &legend,
    )
}
