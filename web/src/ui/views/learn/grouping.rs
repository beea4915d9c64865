//! Lesson `grouping` (LMC paper §3–4): where the entropy of a float tensor lives. The share of
//! elements with each bit set (sign and exponent bits nearly constant, mantissa bits near ½);
//! the order-0 entropy of the bytes interleaved and in byte groups, whole and per 64 KiB block;
//! and the sizes LMC, deflate and zstd really write for both layouts
//! ([`bitlens_lessons::grouping`]). LMC runs on the page's thread; deflate and zstd run in
//! a worker of the lesson's own, as the codec comparison runs them (a `Roundtrip` request of the
//! peer codecs on a Blob of each layout's bytes), so the page module does not carry them. The
//! lesson takes the tensor's first [`MAX_ENCODE`] bytes and says so. State in the link:
//! `tensor`, `transform` (`rotate` or `none`), `group` (whose blocks are drawn).

use super::source::{self, Arrived, Chosen, Tensors};
use super::{claim, js_number, param, param_num, stepped, write_state, Lesson, Listener};
use crate::model::format::bytes;
use crate::ui::charts::{Bar, BarChart};
use crate::ui::io::blob::BlobBuilder;
use crate::ui::shared::Shared;
use crate::ui::views::bitcharts::{bit_bars, role_legend};
use crate::ui::worker::WorkerHandle;
use bitlens_codecs::lmc::Width;
use bitlens_codecs::Transform;
use bitlens_lessons::anatomy::Format;
use bitlens_lessons::grouping::{self, CodecSizes, Layouts, Stream, BLOCK_BYTES};
use bitlens_protocol::js::{Event as WorkerEvent, Js, Request};
use bitlens_protocol::{ComparedCodec, Contender, JobResult, PeerCodec};
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The most bytes of a tensor the lesson measures and encodes (its first ones).
pub const MAX_ENCODE: usize = 1 << 20;

/// The peer codecs run on both layouts, as the codec comparison runs them.
const PEERS: [PeerCodec; 2] = [PeerCodec::Deflate, PeerCodec::Zstd];

/// Props of [`GroupingLesson`].
#[derive(Properties, PartialEq)]
pub struct GroupingProps {
    /// The tensors to choose from.
    pub tensors: Tensors,
    /// The state from the link.
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`GroupingLesson`].
pub enum Msg {
    /// Another tensor.
    Tensor(String),
    /// Sign rotation on or off.
    Rotate(bool),
    /// The byte group whose blocks are drawn.
    Group(usize),
    /// A step key: the previous / next group.
    Step(i64),
    /// A tensor's data arrived.
    Loaded(Arrived),
    /// The worker reported.
    Worker(WorkerEvent),
}

/// What the lesson measured on the tensor's first bytes.
struct Measured {
    bytes: usize,
    ratios: Vec<f64>,
    layouts: Layouts,
    /// LMC's sizes (computed here).
    lmc: Vec<CodecSizes>,
}

/// The lesson's state.
pub struct GroupingLesson {
    chosen: Chosen,
    rotate: bool,
    group: usize,
    measured: Option<Rc<Measured>>,
    error: Option<String>,
    /// The worker running the peers, started with the first measure.
    worker: Option<WorkerHandle>,
    /// Requests of the current measure have tasks `2·generation + layout` (0 interleaved,
    /// 1 grouped); answers to older ones are dropped.
    generation: u32,
    /// Bytes each peer wrote, per layout, as they arrive.
    peers: [Option<Vec<u64>>; 2],
    /// Why the peers have no sizes.
    peer_error: Option<String>,
    _keys: Option<Listener>,
}

fn transform(rotate: bool) -> Transform {
    if rotate {
        Transform::SignRotate
    } else {
        Transform::None
    }
}

/// Byte group `g` of `format` named by the fields its bits come from (after the sign rotation
/// when `rotate`: bit `p` of the rotated element is bit `p − 1` of the element, the sign bit 0).
fn group_name(format: Format, g: usize, rotate: bool) -> String {
    let n = format.bits() as usize;
    let m = format.mantissa_bits() as usize;
    let (mut sign, mut exponent, mut mantissa) = (0, 0, 0);
    for p in 8 * g..8 * g + 8 {
        match if rotate { (p + n - 1) % n } else { p } {
            b if b + 1 == n => sign += 1,
            b if b >= m => exponent += 1,
            _ => mantissa += 1,
        }
    }
    let parts: Vec<String> = [
        (sign > 0).then(|| "sign".to_owned()),
        (exponent > 0).then(|| format!("{exponent} exponent")),
        (mantissa > 0).then(|| format!("{mantissa} mantissa")),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!("group {g}: {} bits", parts.join(", "))
}

impl GroupingLesson {
    fn measure(&mut self, ctx: &Context<Self>) {
        let (Some(t), Some(data)) = (
            self.chosen.source(&ctx.props().tensors),
            self.chosen.data.clone(),
        ) else {
            return;
        };
        let Some(width) = Width::from_bytes(t.width()) else {
            self.error = Some(format!("{}: no byte groups for {}", t.name, t.dtype));
            return;
        };
        let data = &data[..data.len().min(MAX_ENCODE / t.width() * t.width())];
        let tf = transform(self.rotate);
        self.group = self.group.min(t.width() - 1);
        self.measured = Some(Rc::new(Measured {
            bytes: data.len(),
            ratios: grouping::bit_set_ratios(data, width),
            layouts: grouping::layouts(data, width, tf),
            lmc: grouping::sizes(data, width, tf, &[]),
        }));
        self.error = None;
        let grouped = grouping::grouped(data, width, tf);
        if let Err(e) = self.run_peers(ctx, t.dtype, [data, &grouped]) {
            self.peer_error = Some(e);
        }
    }

    /// Asks the worker for the peers' sizes of both layouts.
    fn run_peers(
        &mut self,
        ctx: &Context<Self>,
        dtype: bitlens_tensors::Dtype,
        layouts: [&[u8]; 2],
    ) -> Result<(), String> {
        self.generation += 1;
        self.peers = [None, None];
        self.peer_error = None;
        if self.worker.is_none() {
            let events = ctx.link().callback(Msg::Worker);
            self.worker = Some(WorkerHandle::spawn("worker.js", "lesson worker", events)?);
        }
        let Some(worker) = &self.worker else {
            return Ok(());
        };
        for (layout, bytes) in layouts.into_iter().enumerate() {
            let mut b = BlobBuilder::default();
            let len = bytes.len() as u64;
            b.push(js_sys::Uint8Array::from(bytes).into(), len)
                .map_err(|e| e.to_string())?;
            let blob = b.finish().map_err(|e| e.to_string())?;
            worker.post(&Request::Roundtrip {
                task: 2 * self.generation + layout as u32,
                blob: Js(blob.into()),
                offset: 0,
                bytes: len,
                dtype,
                codecs: PEERS
                    .iter()
                    .map(|&p| ComparedCodec {
                        label: p.name().into(),
                        codec: Contender::Peer(p),
                    })
                    .collect(),
            })?;
        }
        Ok(())
    }

    /// Keeps a worker's answer for the current requests.
    fn answer(&mut self, e: WorkerEvent) -> bool {
        let current = |task: u32| task / 2 == self.generation;
        match e {
            WorkerEvent::Done {
                task,
                result: JobResult::Roundtrip(rows),
                ..
            } if current(task) => {
                self.peers[(task % 2) as usize] =
                    Some(rows.iter().map(|r| r.result.stored_bytes).collect());
                true
            }
            WorkerEvent::Failed { task, message } if task.is_none_or(current) => {
                self.peer_error = Some(message);
                if task.is_none() {
                    // A crashed worker does not answer again: the next measure starts another.
                    self.worker = None;
                }
                true
            }
            _ => false,
        }
    }

    /// Every encoder's sizes: LMC's, then the peers' once both layouts are in.
    fn sizes(&self, m: &Measured) -> Vec<CodecSizes> {
        let mut all = m.lmc.clone();
        if let [Some(i), Some(g)] = &self.peers {
            all.extend(
                PEERS
                    .iter()
                    .zip(i.iter().zip(g))
                    .map(|(p, (&i, &g))| CodecSizes {
                        codec: p.name().to_owned(),
                        interleaved: i as usize,
                        grouped: g as usize,
                    }),
            );
        }
        all
    }

    fn write_link(&self) {
        write_state(
            Lesson::Grouping,
            &[
                ("tensor", self.chosen.name.clone()),
                (
                    "transform",
                    if self.rotate { "rotate" } else { "none" }.into(),
                ),
                ("group", self.group.to_string()),
            ],
        );
    }
}

impl Component for GroupingLesson {
    type Message = Msg;
    type Properties = GroupingProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = GroupingLesson {
            chosen: Chosen::new(&p.tensors, param(&p.params, "tensor")),
            rotate: param(&p.params, "transform") != Some("none"),
            group: param_num(&p.params, "group").unwrap_or(1),
            measured: None,
            error: None,
            worker: None,
            generation: 0,
            peers: [None, None],
            peer_error: None,
            _keys: Listener::steps(ctx.link().callback(Msg::Step)),
        };
        me.chosen.load(&p.tensors, ctx.link(), Msg::Loaded);
        me
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &Self::Properties) -> bool {
        self.chosen
            .follow(&old.tensors, &ctx.props().tensors, ctx.link(), Msg::Loaded);
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Tensor(name) => {
                self.chosen.name = name;
                self.measured = None;
                self.chosen
                    .load(&ctx.props().tensors, ctx.link(), Msg::Loaded);
            }
            Msg::Rotate(r) => {
                self.rotate = r;
                self.measure(ctx);
            }
            Msg::Group(g) => self.group = g,
            Msg::Step(s) => {
                let w = self
                    .chosen
                    .source(&ctx.props().tensors)
                    .map_or(1, |t| t.width());
                let Some(g) = stepped(self.group, s, w) else {
                    return false;
                };
                self.group = g;
            }
            Msg::Loaded(a) => match self.chosen.arrive(a) {
                None => return false,
                Some(Ok(())) => self.measure(ctx),
                Some(Err(e)) => self.error = Some(e),
            },
            Msg::Worker(e) => return self.answer(e),
        }
        self.write_link();
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let head = html! {
            <>
                <h2 id="lesson-grouping-title">{ format!("{}. Where the entropy lives: byte grouping", Lesson::Grouping.number()) }</h2>
                <p class="lead">{ "A float's bits are not alike: the sign and exponent of trained weights take few values, the low mantissa bits are close to coin flips. Stored as they are, each element's predictable high byte sits next to its noisy low byte; byte grouping puts all high bytes together, then all low bytes, so a coder sees one predictable stream and one noisy one." }</p>
            </>
        };
        let (Some(t), Some(m)) = (
            self.chosen.source(&ctx.props().tensors),
            self.measured.clone(),
        ) else {
            return html! {
                <section class="lesson" id="lesson-grouping" aria-labelledby="lesson-grouping-title">
                    { head }
                    if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                    else { <p class="note">{ "Reading the tensor…" }</p> }
                </section>
            };
        };
        let link = ctx.link();
        let w = t.width();
        let l = &m.layouts;
        let lmc = m.lmc.first();
        let bpb = |bits: f64| bits / m.bytes.max(1) as f64;
        let measured = html! {
            <span id="grouping-claim" data-interleaved-bits={js_number(bpb(l.interleaved.entropy_bits))}
                  data-grouped-bits={js_number(bpb(l.grouped_entropy_bits()))}>
                { format!("order-0 entropy {:.3} bits per byte interleaved, {:.3} in byte groups ({:.3} with a code per 64 KiB block); LMC writes {} interleaved and {} grouped for these {}.",
                    bpb(l.interleaved.entropy_bits), bpb(l.grouped_entropy_bits()), bpb(l.grouped_block_entropy_bits()),
                    lmc.map_or(String::new(), |s| bytes(s.interleaved as u64)), lmc.map_or(String::new(), |s| bytes(s.grouped as u64)),
                    bytes(m.bytes as u64)) }
            </span>
        };
        let onrotate = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Rotate(s.value() == "rotate")
        });
        let ongroup = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Group(s.value().parse().unwrap_or(0))
        });
        html! {
            <section class="lesson" id="lesson-grouping" aria-labelledby="lesson-grouping-title"
                     data-group={self.group.to_string()} data-transform={if self.rotate { "rotate" } else { "none" }}
                     data-bytes={m.bytes.to_string()}>
                { head }
                { claim("LMC §3–4:", "the most significant byte of 16-bit values is much more stable than the least significant one, and byte grouping, which copies each byte position into its own region, helps Huffman coding and off-the-shelf compressors alike.", measured) }
                <div class="controls">
                    { source::picker(&ctx.props().tensors, &self.chosen.name, link.callback(Msg::Tensor)) }
                    <label class="control">{ "Before grouping " }
                        <select id="grouping-transform" onchange={onrotate}>
                            <option value="rotate" selected={self.rotate}>{ "rotate the sign to bit 0 (LMC's default)" }</option>
                            <option value="none" selected={!self.rotate}>{ "nothing (the paper's grouping)" }</option>
                        </select>
                    </label>
                    <label class="control">{ "Blocks of " }
                        <select id="grouping-group" onchange={ongroup}>
                            { for (0..w).map(|g| html! {
                                <option value={g.to_string()} selected={g == self.group}>{ group_name(t.format(), g, self.rotate) }</option>
                            }) }
                        </select>
                    </label>
                </div>
                <p class="muted">{ format!("Measured on the first {} of {} ({} {:?}, {} in all){}: LMC runs on this page's thread, deflate and zstd in a worker.",
                    bytes(m.bytes as u64), t.name, t.dtype, t.shape, bytes(t.bytes),
                    if (m.bytes as u64) < t.bytes { format!(", at most {} per lesson", bytes(MAX_ENCODE as u64)) } else { String::new() }) }</p>
                { bit_chart(&t, &m.ratios) }
                { entropy_table(l, t.format(), self.rotate) }
                { block_chart(l, self.group, t.format(), self.rotate) }
                { sizes_table(&self.sizes(&m), m.bytes, l, self.peer_error.as_deref()) }
            </section>
        }
    }
}

fn bit_chart(t: &source::TensorSource, ratios: &[f64]) -> Html {
    let (bars, bands) = bit_bars(t.dtype, ratios, "set in");
    let hi = ratios.len().saturating_sub(1);
    let title = format!(
        "Share of elements with each bit set, bit {hi} (sign) to bit 0: sign and exponent near 0 or 1 are predictable, mantissa bits near ½ are not"
    );
    html! {
        <BarChart id="grouping-bits" title={title} bars={Shared::new(bars)} bands={Shared::new(bands)}
                  legend={role_legend(t.dtype)} y_max={1.0} x_label="bit position (most significant first)"
                  y_label="share of elements with the bit set" height={240.0} />
    }
}

/// The order-0 entropies of both layouts.
fn entropy_table(l: &Layouts, format: Format, rotate: bool) -> Html {
    let row = |id: String, what: String, s: &Stream| {
        let n = s.bytes.max(1) as f64;
        html! {
            <tr data-stream={id} data-bits-per-byte={js_number(s.entropy_bits / n)}
                data-block-bits-per-byte={js_number(s.block_entropy_bits / n)}>
                <th scope="row">{ what }</th>
                <td class="num">{ s.bytes }</td>
                <td class="num">{ format!("{:.3}", s.entropy_bits / n) }</td>
                <td class="num">{ format!("{:.3}", s.block_entropy_bits / n) }</td>
                <td class="num">{ format!("{:.0}", (s.entropy_bits / 8.0).ceil()) }</td>
            </tr>
        }
    };
    let total = l.interleaved.bytes.max(1) as f64;
    html! {
        <figure class="costs" data-chart="grouping-entropy">
            <figcaption><span class="chart-title">{ "Order-0 entropy of each layout (bits per byte)" }</span></figcaption>
            <table aria-label="Order-0 entropy of the interleaved bytes and of each byte group">
                <thead><tr><th scope="col">{ "" }</th><th scope="col">{ "bytes" }</th><th scope="col">{ "whole" }</th>
                    <th scope="col">{ "per 64 KiB block" }</th><th scope="col">{ "bound (bytes)" }</th></tr></thead>
                <tbody>
                    { row("interleaved".into(), "interleaved (as stored)".into(), &l.interleaved) }
                    { for l.groups.iter().enumerate().rev().map(|(g, s)| row(format!("group-{g}"), group_name(format, g, rotate), s)) }
                    <tr data-stream="grouped" data-bits-per-byte={js_number(l.grouped_entropy_bits() / total)}
                        data-block-bits-per-byte={js_number(l.grouped_block_entropy_bits() / total)}>
                        <th scope="row">{ "all groups" }</th>
                        <td class="num">{ l.interleaved.bytes }</td>
                        <td class="num">{ format!("{:.3}", l.grouped_entropy_bits() / total) }</td>
                        <td class="num">{ format!("{:.3}", l.grouped_block_entropy_bits() / total) }</td>
                        <td class="num">{ format!("{:.0}", (l.grouped_entropy_bits() / 8.0).ceil()) }</td>
                    </tr>
                </tbody>
            </table>
            <p class="muted">{ "Entropy: Σ c·log₂(n/c) over the byte histogram, the fewest bits any code of single bytes can spend; a code per block adapts to each block's histogram." }</p>
        </figure>
    }
}

/// The entropy of each 64 KiB block of one group.
fn block_chart(l: &Layouts, group: usize, format: Format, rotate: bool) -> Html {
    let Some(s) = l.groups.get(group) else {
        return Html::default();
    };
    let bars: Vec<Bar> = s
        .block_bits_per_byte
        .iter()
        .enumerate()
        .map(|(i, &b)| Bar {
            label: (i + 1).to_string(),
            value: b,
            color: "var(--accent, #3b6fd8)".into(),
            tip: format!("block {}: {b:.3} bits per byte", i + 1),
        })
        .collect();
    let title = format!(
        "Entropy of each {} KiB block of {} ({} blocks; whole group {:.3} bits per byte)",
        BLOCK_BYTES >> 10,
        group_name(format, group, rotate),
        bars.len(),
        s.bits_per_byte()
    );
    html! {
        <BarChart id="grouping-blocks" title={title} bars={Shared::new(bars)} y_max={8.0}
                  x_label="block" y_label="entropy (bits per byte)" height={240.0} />
    }
}

/// The bytes each encoder wrote for both layouts.
fn sizes_table(sizes: &[CodecSizes], n: usize, l: &Layouts, peer_error: Option<&str>) -> Html {
    let done = sizes.len() > 1;
    let ratio = |b: usize| b as f64 / n.max(1) as f64;
    let mut bars = Vec::new();
    for s in sizes {
        for (layout, b, color) in [
            ("interleaved", s.interleaved, "#b0b7c3"),
            ("grouped", s.grouped, "var(--accent, #3b6fd8)"),
        ] {
            bars.push(Bar {
                label: s.codec.clone(),
                value: b as f64,
                color: color.into(),
                tip: format!(
                    "{} on the {layout} bytes: {b} bytes ({:.4} of {n})",
                    s.codec,
                    ratio(b)
                ),
            });
        }
    }
    let title = format!("Bytes written for the same {n} bytes, interleaved and grouped");
    html! {
        <section class="whole-group" id="grouping-sizes" data-peers={if done { "done" } else { "running" }}>
            <h3>{ "What real encoders write on each layout" }</h3>
            if let Some(e) = peer_error { <p class="error-text" role="alert">{ format!("deflate and zstd: {e}") }</p> }
            else if !done { <p class="note">{ "deflate and zstd are encoding both layouts in a worker…" }</p> }
            <table aria-label="Bytes each encoder wrote, interleaved and grouped">
                <thead><tr><th scope="col">{ "encoder" }</th><th scope="col">{ "interleaved" }</th><th scope="col">{ "ratio" }</th>
                    <th scope="col">{ "grouped" }</th><th scope="col">{ "ratio" }</th></tr></thead>
                <tbody>
                    { for sizes.iter().map(|s| html! {
                        <tr data-codec={s.codec.clone()} data-interleaved={s.interleaved.to_string()} data-grouped={s.grouped.to_string()}>
                            <th scope="row">{ codec_label(&s.codec) }</th>
                            <td class="num">{ s.interleaved }</td><td class="num">{ format!("{:.4}", ratio(s.interleaved)) }</td>
                            <td class="num">{ s.grouped }</td><td class="num">{ format!("{:.4}", ratio(s.grouped)) }</td>
                        </tr>
                    }) }
                    <tr data-codec="entropy">
                        <th scope="row">{ "order-0 bound (one code per stream)" }</th>
                        <td class="num">{ format!("{:.0}", (l.interleaved.entropy_bits / 8.0).ceil()) }</td>
                        <td class="num">{ format!("{:.4}", l.interleaved.entropy_bits / 8.0 / n.max(1) as f64) }</td>
                        <td class="num">{ format!("{:.0}", (l.grouped_entropy_bits() / 8.0).ceil()) }</td>
                        <td class="num">{ format!("{:.4}", l.grouped_entropy_bits() / 8.0 / n.max(1) as f64) }</td>
                    </tr>
                </tbody>
            </table>
            <p class="muted">{ "LMC interleaved: its stream of the bytes as 1-byte elements (no grouping); grouped: LMC as bitlens compress runs it. deflate and zstd code the interleaved bytes, then the grouped bytes, in a worker, as the codec comparison runs them (and checked to decode back)." }</p>
            <BarChart id="grouping-size-bars" title={title} bars={Shared::new(bars)}
                      legend={vec![("interleaved".to_owned(), "#b0b7c3".to_owned()), ("grouped".to_owned(), "var(--accent, #3b6fd8)".to_owned())]}
                      x_label="encoder and layout" y_label="bytes written" height={220.0} />
        </section>
    }
}

fn codec_label(codec: &str) -> &str {
    match codec {
        "lmc" => "LMC (bitlens)",
        "deflate" => "deflate (miniz_oxide, level 6)",
        "zstd" => "zstd (ruzstd, fastest)",
        other => other,
    }
}
