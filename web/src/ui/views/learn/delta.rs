//! Lesson `delta` (BitSnap paper §3.3, and LMC's XOR deltas): two checkpoints of the same tensor
//! — the active one and the one before it in the loaded order, as Compare pairs them (the first
//! and the second when the first is active; the bundled demo has three consecutive steps). The
//! bits that flip at each position and the changed fraction; then the BitSnap bitmask delta
//! against the XOR coded with LMC as the changed fraction varies: point `p` takes the second
//! checkpoint's values at `p` % of the positions (evenly spread) and the first's elsewhere, and
//! every point is encoded for real ([`bitlens_lessons::delta`]). The encodes run on the
//! page's thread, on the tensors' first [`MAX_ENCODE`] bytes. State in the link: `tensor`, `p`.

use super::grouping::MAX_ENCODE;
use super::source::{self, TensorSource, Tensors};
use super::{claim, js_number, param, param_num, stepped, write_state, Lesson, Listener};
use crate::model::checkpoint::Checkpoint;
use crate::model::format::{bytes, percent};
use crate::ui::charts::{BarChart, LineChart, Series};
use crate::ui::loader::Source;
use crate::ui::shared::Shared;
use crate::ui::views::bitcharts::{bit_bars, role_legend};
use bitlens_codecs::lmc::Width;
use bitlens_lessons::delta::{self, DeltaPoint, Flips};
use std::collections::HashMap;
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The step between the curve's points, in %.
const STEP: u32 = 10;

/// Two checkpoints of a sequence and the tensors the lesson can read from each.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The first (older) checkpoint's name.
    pub base_name: String,
    /// The second one's name.
    pub new_name: String,
    /// The first one's float tensors.
    pub base: Tensors,
    /// The second one's.
    pub new: Tensors,
}

impl Pair {
    /// The tensors of both, with the same name, dtype and length, in the second's order.
    fn common(&self) -> Vec<(TensorSource, TensorSource)> {
        self.new
            .iter()
            .filter_map(|n| {
                let b = self
                    .base
                    .iter()
                    .find(|b| b.name == n.name && b.dtype == n.dtype && b.bytes == n.bytes)?;
                Some((b.clone(), n.clone()))
            })
            .collect()
    }
}

/// The pair the lesson reads: the active checkpoint and the one before it (the first two when the
/// first is active); `None` with fewer than two.
pub fn pair(
    checkpoints: &[Checkpoint],
    active: Option<u32>,
    files: &HashMap<u32, Vec<Source>>,
) -> Option<Rc<Pair>> {
    let i = active
        .and_then(|id| checkpoints.iter().position(|c| c.id == id))
        .unwrap_or(0);
    let (b, n) = if i > 0 { (i - 1, i) } else { (0, 1) };
    let (b, n) = (checkpoints.get(b)?, checkpoints.get(n)?);
    Some(Rc::new(Pair {
        base_name: b.name.clone(),
        new_name: n.name.clone(),
        base: source::sources(Some(b), files.get(&b.id)),
        new: source::sources(Some(n), files.get(&n.id)),
    }))
}

/// Props of [`DeltaLesson`].
#[derive(Properties, PartialEq)]
pub struct DeltaProps {
    /// The two checkpoints.
    pub pair: Option<Rc<Pair>>,
    /// The state from the link.
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`DeltaLesson`].
pub enum Msg {
    /// Another tensor.
    Tensor(String),
    /// Another point of the curve, in %.
    Percent(u32),
    /// A step key: the previous / next point.
    Step(i64),
    /// Both versions of a tensor arrived (its name), or why not.
    Loaded(String, Result<(Vec<u8>, Vec<u8>), String>),
}

/// What the lesson computed on a pair.
struct Measured {
    width: Width,
    flips: Flips,
    curve: Vec<DeltaPoint>,
}

/// The lesson's state.
pub struct DeltaLesson {
    name: String,
    percent: u32,
    measured: Option<Rc<Measured>>,
    error: Option<String>,
    _keys: Option<Listener>,
}

/// The first [`MAX_ENCODE`] bytes (whole elements) of a tensor.
async fn read_capped(t: &TensorSource) -> Result<Vec<u8>, String> {
    t.read_first(MAX_ENCODE as u64).await
}

impl DeltaLesson {
    fn chosen(&self, ctx: &Context<Self>) -> Option<(TensorSource, TensorSource)> {
        let common = ctx.props().pair.as_ref()?.common();
        let largest = common.iter().map(|(_, n)| n.bytes).max()?;
        common
            .iter()
            .find(|(_, n)| n.name == self.name)
            .or_else(|| common.iter().find(|(_, n)| n.bytes == largest))
            .cloned()
    }

    fn load(&mut self, ctx: &Context<Self>) {
        self.measured = None;
        let Some((b, n)) = self.chosen(ctx) else {
            return;
        };
        self.name = n.name.clone();
        ctx.link().send_future(async move {
            let read = async { Ok((read_capped(&b).await?, read_capped(&n).await?)) };
            Msg::Loaded(n.name.clone(), read.await)
        });
    }

    fn write_link(&self) {
        write_state(
            Lesson::Delta,
            &[
                ("tensor", self.name.clone()),
                ("p", self.percent.to_string()),
            ],
        );
    }
}

impl Component for DeltaLesson {
    type Message = Msg;
    type Properties = DeltaProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let percent = param_num::<u32>(&p.params, "p").unwrap_or(100).min(100) / STEP * STEP;
        let mut me = DeltaLesson {
            name: param(&p.params, "tensor").unwrap_or_default().to_owned(),
            percent,
            measured: None,
            error: None,
            _keys: Listener::steps(ctx.link().callback(Msg::Step)),
        };
        me.load(ctx);
        me
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &Self::Properties) -> bool {
        if old.pair != ctx.props().pair {
            self.load(ctx);
        }
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Tensor(name) => {
                self.name = name;
                self.load(ctx);
            }
            Msg::Percent(p) => self.percent = p.min(100),
            Msg::Step(s) => {
                let points = (100 / STEP + 1) as usize;
                let Some(i) = stepped((self.percent / STEP) as usize, s, points) else {
                    return false;
                };
                self.percent = i as u32 * STEP;
            }
            Msg::Loaded(name, result) => {
                if name != self.name {
                    return false;
                }
                let computed = result.and_then(|(b, n)| {
                    let t = self.chosen(ctx).ok_or("the tensor is gone")?.1;
                    let width = Width::from_bytes(t.width())
                        .ok_or_else(|| format!("{}: no element width for {}", t.name, t.dtype))?;
                    let err = |e: bitlens_lessons::LessonError| format!("{name}: {e}");
                    Ok(Measured {
                        width,
                        flips: delta::flips(&b, &n, width).map_err(err)?,
                        curve: delta::curve(&b, &n, width, STEP).map_err(err)?,
                    })
                });
                match computed {
                    Ok(m) => {
                        self.measured = Some(Rc::new(m));
                        self.error = None;
                    }
                    Err(e) => self.error = Some(e),
                }
            }
        }
        self.write_link();
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let head = html! {
            <>
                <h2 id="lesson-delta-title">{ format!("{}. Two checkpoints: what changed, and how to store it", Lesson::Delta.number()) }</h2>
                <p class="lead">{ "Between two consecutive checkpoints many weights keep their exact bits. A delta stores only what changed: BitSnap keeps one bit per element saying whether it changed, then the new values of the changed ones; LMC codes the XOR of the two tensors, where unchanged elements are zero bytes and changed ones mostly flip low mantissa bits." }</p>
            </>
        };
        let Some(pair) = ctx.props().pair.clone() else {
            return html! {
                <section class="lesson" id="lesson-delta" aria-labelledby="lesson-delta-title">
                    { head }
                    <p class="note" id="delta-need-two">{ "This lesson needs two checkpoints of the same model: open two (or more) steps, or load the bundled demo, which has three." }</p>
                </section>
            };
        };
        let (Some((b, n)), Some(m)) = (self.chosen(ctx), self.measured.clone()) else {
            return html! {
                <section class="lesson" id="lesson-delta" aria-labelledby="lesson-delta-title">
                    { head }
                    if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                    else if pair.common().is_empty() { <p class="note">{ "The two checkpoints share no float tensor of the same shape." }</p> }
                    else { <p class="note">{ "Reading both tensors…" }</p> }
                </section>
            };
        };
        let link = ctx.link();
        let common: Vec<TensorSource> = pair.common().into_iter().map(|(_, n)| n).collect();
        let even = delta::break_even(m.width);
        let Some(point) = m.curve.iter().find(|p| p.percent == self.percent) else {
            return Html::default();
        };
        let full = m.curve.last().unwrap_or(point);
        let measured = html! {
            <span id="delta-claim" data-changed-fraction={js_number(m.flips.changed_fraction)}
                  data-break-even={js_number(even)}>
                { format!("{} of the elements changed between the two checkpoints; the bitmask delta is {} and XOR + LMC {} for {} (the break-even for {} is {} changed).",
                    percent(m.flips.changed_fraction), bytes(full.bitmask_bytes as u64), bytes(full.xor_lmc_bytes as u64),
                    bytes(full.raw_bytes as u64), n.dtype, even_text(even)) }
            </span>
        };
        let onpercent = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Percent(s.value().parse().unwrap_or(100))
        });
        html! {
            <section class="lesson" id="lesson-delta" aria-labelledby="lesson-delta-title"
                     data-percent={self.percent.to_string()} data-bytes={full.raw_bytes.to_string()}
                     data-base={pair.base_name.clone()} data-new={pair.new_name.clone()}>
                { head }
                { claim("BitSnap §3.3:", "packing the bitmask into bits makes the bitmask delta pay whenever less than 93.75 % of the parameters changed.", measured) }
                <div class="controls">
                    { source::picker(&common, &n.name, link.callback(Msg::Tensor)) }
                    <label class="control">{ "Positions taking the second checkpoint's value " }
                        <select id="delta-percent" onchange={onpercent}>
                            { for m.curve.iter().map(|p| html! {
                                <option value={p.percent.to_string()} selected={p.percent == self.percent}>{ format!("{} %", p.percent) }</option>
                            }) }
                        </select>
                    </label>
                </div>
                <p class="muted">{ format!("{} in {} (first) → {} (second){}; encoded on this page's thread.",
                    n.name, pair.base_name, pair.new_name,
                    if (full.raw_bytes as u64) < n.bytes { format!(", its first {} (at most {} per lesson)", bytes(full.raw_bytes as u64), bytes(MAX_ENCODE as u64)) } else { String::new() }) }</p>
                { flip_chart(&b, &m.flips) }
                { point_view(point, even) }
                { curve_chart(&m.curve, even, point) }
                <p class="muted" id="delta-reach">{ format!("No mix of the two checkpoints changes more elements than the pair itself, so on this pair the curve stops at {}. The bitmask delta grows from n/8 bytes (the mask) by {} bytes per changed element and would meet the tensor's size at the break-even, {}; the encoder then stores the values densely.",
                    percent(full.changed_fraction), n.width(), even_text(even)) }</p>
                { curve_table(&m.curve, self.percent) }
            </section>
        }
    }
}

fn flip_chart(t: &TensorSource, f: &Flips) -> Html {
    let ratios: Vec<f64> = f
        .flip_counts
        .iter()
        .map(|&c| c as f64 / f.elements.max(1) as f64)
        .collect();
    let (bars, bands) = bit_bars(t.dtype, &ratios, "flipped in");
    let title = format!(
        "Share of elements whose bit flipped between the two checkpoints ({} of {} elements changed: {})",
        f.changed,
        f.elements,
        percent(f.changed_fraction)
    );
    html! {
        <BarChart id="delta-flips" title={title} bars={Shared::new(bars)} bands={Shared::new(bands)}
                  legend={role_legend(t.dtype)} x_label="bit position (most significant first)"
                  y_label="share of elements with the bit flipped" height={240.0} />
    }
}

/// The chosen point's sizes.
fn point_view(p: &DeltaPoint, even: f64) -> Html {
    let mode = if p.dense {
        format!(
            "past the break-even ({}), so the encoder stores every value densely",
            even_text(even)
        )
    } else {
        "under the break-even: bitmask + changed values".to_owned()
    };
    html! {
        <p class="runs" id="delta-point" data-percent={p.percent.to_string()} data-changed={p.changed.to_string()}
           data-bitmask={p.bitmask_bytes.to_string()} data-bitsnap={p.bitsnap_bytes.to_string()}
           data-xor-lmc={p.xor_lmc_bytes.to_string()} data-dense={p.dense.to_string()}>
            { format!("At {} % of the positions from the second checkpoint, {} elements differ from the first ({}): BitSnap's bitmask delta is {} bytes ({} with its values LMC-coded, as bitlens stores it), the XOR coded with LMC {} bytes, the tensor {} bytes; {mode}.",
                p.percent, p.changed, percent(p.changed_fraction), p.bitmask_bytes, p.bitsnap_bytes, p.xor_lmc_bytes, p.raw_bytes) }
        </p>
    }
}

fn curve_chart(curve: &[DeltaPoint], even: f64, chosen: &DeltaPoint) -> Html {
    let line = |name: &str, color: &str, f: fn(&DeltaPoint) -> usize| Series {
        name: name.to_owned(),
        color: color.to_owned(),
        points: curve
            .iter()
            .map(|p| (100.0 * p.changed_fraction, f(p) as f64))
            .collect(),
    };
    let raw = curve.first().map_or(0.0, |p| p.raw_bytes as f64);
    let series = vec![
        line("BitSnap bitmask (raw values)", "#d9822b", |p| {
            p.bitmask_bytes
        }),
        line("BitSnap, values LMC-coded", "#8f5fbf", |p| p.bitsnap_bytes),
        line("XOR + LMC", "var(--accent, #3b6fd8)", |p| p.xor_lmc_bytes),
        line("tensor (raw)", "#8a8f98", |p| p.raw_bytes),
        Series {
            name: format!("bitmask break-even ({})", even_text(even)),
            color: "#c0392b".into(),
            points: vec![(100.0 * even, 0.0), (100.0 * even, raw)],
        },
        Series {
            name: format!("chosen point ({} % of positions)", chosen.percent),
            color: "#2c3e50".into(),
            points: vec![
                (100.0 * chosen.changed_fraction, 0.0),
                (100.0 * chosen.changed_fraction, raw),
            ],
        },
    ];
    let title = format!(
        "Delta size against the changed fraction (points at 0, {STEP}, …, 100 % of the positions from the second checkpoint; the break-even line at {})",
        even_text(even)
    );
    html! {
        <LineChart id="delta-curve" title={title} series={Shared::new(series)}
                   x_label="changed elements (%)" y_label="bytes written" height={280.0} />
    }
}

/// The curve's numbers, the chart's text alternative.
fn curve_table(curve: &[DeltaPoint], current: u32) -> Html {
    html! {
        <details class="code-table" open=true>
            <summary>{ "Every point of the curve, encoded for real" }</summary>
            <div class="table-wrap">
                <table id="delta-points" aria-label="Delta sizes at each point of the curve">
                    <thead><tr><th scope="col">{ "positions from the second" }</th><th scope="col">{ "changed" }</th>
                        <th scope="col">{ "bitmask (raw values)" }</th><th scope="col">{ "bitmask, LMC values" }</th>
                        <th scope="col">{ "XOR + LMC" }</th><th scope="col">{ "stored as" }</th></tr></thead>
                    <tbody>
                        { for curve.iter().map(|p| html! {
                            <tr data-percent={p.percent.to_string()} data-changed-fraction={js_number(p.changed_fraction)}
                                class={classes!((p.percent == current).then_some("current"))}>
                                <td class="num">{ format!("{} %", p.percent) }</td>
                                <td class="num">{ percent(p.changed_fraction) }</td>
                                <td class="num">{ p.bitmask_bytes }</td>
                                <td class="num">{ p.bitsnap_bytes }</td>
                                <td class="num">{ p.xor_lmc_bytes }</td>
                                <td>{ if p.dense { "dense values" } else { "bitmask + changed" } }</td>
                            </tr>
                        }) }
                    </tbody>
                </table>
            </div>
        </details>
    }
}

/// The break-even as the paper writes it (`93.75 %`).
fn even_text(even: f64) -> String {
    format!("{:.2} %", 100.0 * even)
}
