//! Lesson `huffman` (LMC §4.1–4.2): one block of one byte group of a tensor, as the LMC encoder
//! cuts it — its histogram, the encoder's code lengths and canonical codes, the tree of the most
//! frequent symbols, the bits spent against the Shannon bound and the unlimited Huffman code, the
//! run variant, and beside it what the real encoder wrote ([`huffman::explain_block`]); over the
//! whole group, one global table against a table per block ([`huffman::compare_tables`]) and the
//! encoder's bytes per block.

use super::source::{self, Arrived, Chosen, Tensors};
use super::{claim, js_number, param, param_num, write_state, Lesson, Listener};
use crate::model::format::bytes;
use crate::ui::charts::{Bar, BarChart};
use crate::ui::shared::Shared;
use bitlens_codecs::lmc::{Params, Width};
use bitlens_codecs::rle::RUN_TRY_SHARE;
use bitlens_lessons::huffman::{self, BlockExplanation, LeafKind, TableComparison};
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// Symbols drawn as leaves of the tree.
const TOP: usize = 12;

/// Props of [`HuffmanLesson`].
#[derive(Properties, PartialEq)]
pub struct HuffmanProps {
    /// The tensors to choose from.
    pub tensors: Tensors,
    /// The state from the link: `tensor`, `group`, `block`.
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`HuffmanLesson`].
pub enum Msg {
    /// Another tensor.
    Tensor(String),
    /// Another byte group.
    Group(usize),
    /// Block `n`.
    Block(usize),
    /// A step key: −1, +1, or to the first / last block.
    Step(i64),
    /// A tensor's data arrived.
    Loaded(Arrived),
}

/// One byte group explained: every block, and the whole-group comparison.
struct Group {
    blocks: Vec<BlockExplanation>,
    tables: TableComparison,
    block_bytes: usize,
    len: usize,
}

/// The lesson's state.
pub struct HuffmanLesson {
    chosen: Chosen,
    group: usize,
    block: usize,
    explained: Option<Rc<Group>>,
    error: Option<String>,
    _keys: Option<Listener>,
}

/// The encoder's parameters for a tensor.
fn params_of(t: &source::TensorSource) -> Params {
    Params::new(Width::from_bytes(t.width()).unwrap_or(Width::W1))
}

fn group_label(w: usize, g: usize) -> String {
    let what = if g + 1 == w {
        "high byte: sign and exponent"
    } else if g + 2 == w {
        "exponent's last bit and mantissa"
    } else {
        "mantissa"
    };
    format!("byte {g} ({what})")
}

fn kind_label(k: LeafKind) -> &'static str {
    match k {
        LeafKind::Raw => "raw",
        LeafKind::Run => "run",
        LeafKind::Huffman => "Huffman",
        LeafKind::HuffmanRuns => "Huffman with runs",
        LeafKind::Rans => "rANS",
        LeafKind::NibblePairs => "Huffman over nibble pairs",
    }
}

impl HuffmanLesson {
    fn source(&self, ctx: &Context<Self>) -> Option<source::TensorSource> {
        self.chosen.source(&ctx.props().tensors)
    }

    fn load(&mut self, ctx: &Context<Self>) {
        self.explained = None;
        self.chosen
            .load(&ctx.props().tensors, ctx.link(), Msg::Loaded);
    }

    /// Explains every block of the chosen group, and the group as a whole.
    fn explain(&mut self, ctx: &Context<Self>) {
        let (Some(t), Some(data)) = (self.source(ctx), self.chosen.data.clone()) else {
            return;
        };
        let params = params_of(&t);
        self.group = self.group.min(params.width.bytes() - 1);
        let run = || -> Result<Group, huffman::ExplainError> {
            let bytes = huffman::group_bytes(&data, params.width, params.transform, self.group)?;
            let bb = params.block_bytes();
            let limit = u32::from(params.code_limit);
            let blocks = bytes
                .chunks(bb)
                .map(|b| huffman::explain_block(b, limit, TOP))
                .collect::<Result<Vec<_>, _>>()?;
            let tables = huffman::compare_tables(&bytes, params.block_log2, limit)?;
            Ok(Group {
                blocks,
                tables,
                block_bytes: bb,
                len: bytes.len(),
            })
        };
        match run() {
            Ok(g) => {
                self.block = self.block.min(g.blocks.len().saturating_sub(1));
                self.explained = Some(Rc::new(g));
                self.error = None;
            }
            Err(e) => self.error = Some(format!("{}: {e}", t.name)),
        }
    }

    fn write_link(&self) {
        write_state(
            Lesson::Huffman,
            &[
                ("tensor", self.chosen.name.clone()),
                ("group", self.group.to_string()),
                ("block", self.block.to_string()),
            ],
        );
    }

    fn controls(&self, ctx: &Context<Self>, t: &source::TensorSource, blocks: usize) -> Html {
        let link = ctx.link();
        let w = t.width();
        let ongroup = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Group(s.value().parse().unwrap_or(0))
        });
        let onblock = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Block(s.value().parse().unwrap_or(0))
        });
        html! {
            <div class="controls">
                { source::picker(&ctx.props().tensors, &self.chosen.name, link.callback(Msg::Tensor)) }
                <label class="control">{ "Byte group " }
                    <select id="huffman-group" onchange={ongroup}>
                        { for (0..w).map(|g| html! {
                            <option value={g.to_string()} selected={g == self.group}>{ group_label(w, g) }</option>
                        }) }
                    </select>
                </label>
                <span class="control" role="group" aria-label="Block">
                    <button id="block-prev" class="button" disabled={self.block == 0}
                            onclick={link.callback(|_| Msg::Step(-1))} aria-label="Previous block">{ "←" }</button>
                    <label>{ "Block " }
                        <select id="huffman-block" onchange={onblock}>
                            { for (0..blocks).map(|b| html! {
                                <option value={b.to_string()} selected={b == self.block}>{ format!("{} of {blocks}", b + 1) }</option>
                            }) }
                        </select>
                    </label>
                    <button id="block-next" class="button" disabled={self.block + 1 >= blocks}
                            onclick={link.callback(|_| Msg::Step(1))} aria-label="Next block">{ "→" }</button>
                </span>
            </div>
        }
    }
}

impl Component for HuffmanLesson {
    type Message = Msg;
    type Properties = HuffmanProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = HuffmanLesson {
            chosen: Chosen::new(&p.tensors, param(&p.params, "tensor")),
            group: param_num(&p.params, "group").unwrap_or(1),
            block: param_num(&p.params, "block").unwrap_or(0),
            explained: None,
            error: None,
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
                self.block = 0;
                self.load(ctx);
            }
            Msg::Group(g) => {
                self.group = g;
                self.explain(ctx);
            }
            Msg::Block(b) => self.block = b,
            Msg::Step(s) => {
                let n = self.explained.as_ref().map_or(1, |g| g.blocks.len()) as i64;
                let b = match s {
                    i64::MIN => 0,
                    i64::MAX => n - 1,
                    s => (self.block as i64 + s).clamp(0, n - 1),
                };
                if b as usize == self.block {
                    return false;
                }
                self.block = b as usize;
            }
            Msg::Loaded(a) => match self.chosen.arrive(a) {
                None => return false,
                Some(Ok(())) => self.explain(ctx),
                Some(Err(e)) => self.error = Some(e),
            },
        }
        self.write_link();
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let t = self.source(ctx);
        let head = html! {
            <>
                <h2 id="lesson-huffman-title">{ format!("{}. Huffman vs entropy, block by block", Lesson::Huffman.number()) }</h2>
                <p class="lead">{ "LMC groups the bytes of each element (all high bytes together, then the next byte…), cuts each group into blocks and gives every block its own canonical Huffman code. Frequent byte values get short codes; the entropy of the block's histogram is the bound no order-0 code can beat." }</p>
            </>
        };
        let (Some(t), Some(g)) = (t, self.explained.clone()) else {
            return html! {
                <section class="lesson" id="lesson-huffman" aria-labelledby="lesson-huffman-title">
                    { head }
                    if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                    else { <p class="note">{ "Reading the tensor…" }</p> }
                </section>
            };
        };
        let Some(e) = g.blocks.get(self.block) else {
            return Html::default();
        };
        let start = self.block * g.block_bytes;
        let per_byte = |bits: f64| bits / e.len as f64;
        let measured = html! {
            <span id="huffman-claim" data-code-bits-per-byte={js_number(per_byte(e.code.code_bits as f64))}
                  data-entropy-bits-per-byte={js_number(per_byte(e.entropy_bits))}>
                { format!("this block's code spends {:.3} bits per byte against an entropy of {:.3} (+{:.3}); over the whole group the encoder wrote {} against a bound of {} for a table per block.",
                    per_byte(e.code.code_bits as f64), per_byte(e.entropy_bits),
                    per_byte(e.code.code_bits as f64 - e.entropy_bits),
                    bytes(g.tables.encoder_bytes as u64), bytes((g.tables.block_entropy_bits / 8.0).ceil() as u64)) }
            </span>
        };
        html! {
            <section class="lesson" id="lesson-huffman" aria-labelledby="lesson-huffman-title"
                     data-block={self.block.to_string()} data-group={self.group.to_string()}>
                { head }
                { claim("LMC §4.2:", "a Huffman code is optimal within 1 bit per symbol of the entropy, and a new codebook per block brings block-adaptive Huffman very close to the ideal ratio the entropy offers.", measured) }
                { self.controls(ctx, &t, g.blocks.len()) }
                <p class="muted">{ format!("Block {} of byte group {}: group bytes {start}..{} of {} ({} per block: the encoder's block size for {}{}).",
                    self.block + 1, self.group, start + e.len, g.len, bytes(g.block_bytes as u64), t.dtype,
                    if t.truncated() { "; only the tensor's first 64 MiB are read" } else { "" }) }</p>
                <div class="lesson-grid">
                    { histogram(e, self.block) }
                    { costs(e) }
                </div>
                <div class="lesson-grid">
                    { super::tree::view(&e.tree, TOP) }
                    { encoder(e) }
                </div>
                { runs(e, &g) }
                { code_table(e) }
                { whole_group(&g) }
            </section>
        }
    }
}

fn histogram(e: &BlockExplanation, block: usize) -> Html {
    let bars: Vec<Bar> = e
        .histogram
        .iter()
        .enumerate()
        .map(|(v, &c)| Bar {
            label: format!("{v:02x}"),
            value: f64::from(c),
            color: "var(--accent, #3b6fd8)".into(),
            tip: format!(
                "byte 0x{v:02x}: {c} times ({:.2} %)",
                100.0 * f64::from(c) / e.len as f64
            ),
        })
        .collect();
    let title = format!(
        "Byte histogram of block {} ({} bytes, {} distinct values, entropy {:.3} bits per byte)",
        block + 1,
        e.len,
        e.distinct,
        e.entropy_bits / e.len as f64
    );
    html! {
        <BarChart id="huffman-histogram" title={title} bars={Shared::new(bars)}
                  x_label="byte value (hex)" y_label="count (bytes)" height={240.0} />
    }
}

/// Bits spent, exactly, with the bound beside them.
fn costs(e: &BlockExplanation) -> Html {
    let n = e.len as f64;
    let row = |id: &str, what: &str, bits: f64, note: String| {
        html! {
            <tr data-cost={id.to_owned()} data-bits={js_number(bits)}>
                <th scope="row">{ what }</th>
                <td class="num">{ format!("{:.0}", bits.ceil()) }</td>
                <td class="num">{ format!("{:.0}", (bits / 8.0).ceil()) }</td>
                <td class="num">{ format!("{:.3}", bits / n) }</td>
                <td>{ note }</td>
            </tr>
        }
    };
    let limit_cost = e.code.code_bits - e.unlimited.code_bits;
    html! {
        <figure class="costs" data-chart="huffman-costs">
            <figcaption><span class="chart-title">{ "Bits spent on this block" }</span></figcaption>
            <table aria-label="Bits spent on this block, against the Shannon bound">
                <thead><tr><th scope="col">{ "" }</th><th scope="col">{ "bits" }</th><th scope="col">{ "bytes" }</th><th scope="col">{ "bits / byte" }</th><th scope="col">{ "" }</th></tr></thead>
                <tbody>
                    { row("entropy", "Shannon bound (order 0)", e.entropy_bits, "no code over single bytes does better".into()) }
                    { row("unlimited", "optimal Huffman, no length limit", e.unlimited.code_bits as f64, format!("longest code {} bits", e.unlimited.longest)) }
                    { row("limited", "the encoder's code", e.code.code_bits as f64,
                        format!("lengths ≤ {}: the limit costs {limit_cost} bits; longest {}", e.limit, e.code.longest)) }
                    { row("plain", "+ table, kind byte, stream sizes", 8.0 * e.plain_bytes as f64,
                        format!("code-length table {} bytes", e.code.table_bytes)) }
                    { row("encoder", "what the encoder wrote", 8.0 * e.encoder.coded_bytes as f64, "see beside".into()) }
                    { row("raw", "stored raw", 8.0 * e.raw_bytes as f64, "kind byte + the bytes".into()) }
                </tbody>
            </table>
        </figure>
    }
}

/// The real encoder's output for the block, leaf by leaf.
fn encoder(e: &BlockExplanation) -> Html {
    let enc = &e.encoder;
    html! {
        <figure class="encoder" id="encoder-block" data-encoder-bytes={enc.coded_bytes.to_string()}
                data-explained-bytes={enc.explained_bytes.to_string()}>
            <figcaption><span class="chart-title">{ "What the real encoder wrote" }</span></figcaption>
            <p>{ format!("{} bytes for {} input bytes ({:.3} bits per byte); the explanation's arithmetic gives {} bytes{}.",
                enc.coded_bytes, e.len, 8.0 * enc.coded_bytes as f64 / e.len as f64, enc.explained_bytes,
                if enc.split_bytes > 0 { format!(", with {} split byte(s)", enc.split_bytes) } else { String::new() }) }</p>
            <table aria-label="The encoder's leaves">
                <thead><tr>
                    <th scope="col">{ "bytes" }</th><th scope="col">{ "coded as" }</th><th scope="col">{ "header" }</th>
                    <th scope="col">{ "stored" }</th><th scope="col">{ "table" }</th><th scope="col">{ "sizes" }</th><th scope="col">{ "4 streams" }</th><th scope="col">{ "total" }</th>
                </tr></thead>
                <tbody>
                    { for enc.leaves.iter().map(|l| html! {
                        <tr data-kind={kind_label(l.kind)}>
                            <td class="num">{ format!("{}..{}", l.offset, l.offset + l.len) }</td>
                            <td>{ kind_label(l.kind) }</td>
                            <td class="num">{ l.header_bytes }</td>
                            <td class="num">{ l.stored_bytes }</td>
                            <td class="num">{ l.code.as_ref().map_or(0, |c| c.table_bytes) }</td>
                            <td class="num">{ l.size_bytes }</td>
                            <td class="num">{ format!("{:?}", l.stream_bytes) }</td>
                            <td class="num">{ l.coded_bytes }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </figure>
    }
}

/// Runs: whether this block qualifies, what they cost, and the group's blocks where they pay.
fn runs(e: &BlockExplanation, g: &Group) -> Html {
    let top = e.histogram.iter().copied().max().unwrap_or(0);
    let share = f64::from(top) / e.len as f64;
    let here = match &e.runs {
        Some(r) => format!(
            "Runs: byte 0x{:02x} covers {:.1} % of this block, so the encoder tries run symbols: {} runs and {} literals cost {} bytes against {} for plain Huffman — they {}.",
            r.run_value,
            100.0 * r.share,
            r.runs,
            r.literals,
            r.bytes,
            e.plain_bytes,
            if r.bytes < e.plain_bytes { "pay" } else { "do not pay" }
        ),
        None => format!(
            "Runs: the most frequent byte covers {:.1} % of this block, under the {:.0} % at which the encoder tries run symbols.",
            100.0 * share,
            100.0 * RUN_TRY_SHARE
        ),
    };
    let paying: Vec<usize> = g
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.runs.as_ref().is_some_and(|r| r.bytes < b.plain_bytes))
        .map(|(i, _)| i + 1)
        .collect();
    let list = if paying.is_empty() {
        "In this byte group runs pay in no block.".to_string()
    } else {
        format!(
            "In this byte group runs pay in block(s) {}.",
            paying
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    html! { <p class="runs" id="huffman-runs" data-paying={paying.len().to_string()}>{ here }{ " " }{ list }</p> }
}

/// The encoder's code lengths and canonical codes.
fn code_table(e: &BlockExplanation) -> Html {
    html! {
        <details class="code-table" open=true>
            <summary>{ format!("The canonical code: {} symbols, lengths {}..{} bits, table {} bytes",
                e.code.symbols.len(), e.code.symbols.first().map_or(0, |s| s.length), e.code.longest, e.code.table_bytes) }</summary>
            <div class="table-wrap scroll">
                <table aria-label="Code lengths and canonical codes">
                    <thead><tr><th scope="col">{ "byte" }</th><th scope="col">{ "count" }</th><th scope="col">{ "length" }</th><th scope="col">{ "code" }</th></tr></thead>
                    <tbody>
                        { for e.code.symbols.iter().map(|s| html! {
                            <tr><td>{ format!("0x{:02x}", s.symbol) }</td><td class="num">{ s.count }</td>
                                <td class="num">{ s.length }</td><td class="code">{ &s.bits }</td></tr>
                        }) }
                    </tbody>
                </table>
            </div>
        </details>
    }
}

/// One global table against a table per block, and the encoder's bytes per block.
fn whole_group(g: &Group) -> Html {
    let t = &g.tables;
    let sum: usize = g.blocks.iter().map(|b| b.encoder.coded_bytes).sum();
    let bars: Vec<Bar> = g
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| Bar {
            label: (i + 1).to_string(),
            value: b.encoder.coded_bytes as f64,
            color: "var(--accent, #3b6fd8)".into(),
            tip: format!(
                "block {}: {} bytes written for {} ({:.3} bits per byte, entropy {:.3})",
                i + 1,
                b.encoder.coded_bytes,
                b.len,
                8.0 * b.encoder.coded_bytes as f64 / b.len as f64,
                b.entropy_bits / b.len as f64
            ),
        })
        .collect();
    let title = format!(
        "Bytes the encoder wrote per block ({} blocks, {} in all for {} group bytes)",
        g.blocks.len(),
        sum,
        g.len
    );
    let row = |id: &str, what: &str, tables: Option<(usize, usize)>, total: u64| {
        let (tables, table_bytes) = tables
            .map_or(("—".to_string(), "—".to_string()), |(t, b)| {
                (t.to_string(), b.to_string())
            });
        html! {
            <tr data-row={id.to_owned()} data-bytes={total.to_string()}>
                <th scope="row">{ what }</th><td class="num">{ tables }</td><td class="num">{ table_bytes }</td>
                <td class="num">{ total }</td><td class="num">{ format!("{:.3}", 8.0 * total as f64 / t.len as f64) }</td>
            </tr>
        }
    };
    html! {
        <section class="whole-group" id="huffman-group-figures" data-group-encoder-bytes={t.encoder_bytes.to_string()}
                 data-blocks-sum={sum.to_string()}>
            <h3>{ "The whole byte group: one table or one per block?" }</h3>
            <table aria-label="One global table against a table per block">
                <thead><tr><th scope="col">{ "" }</th><th scope="col">{ "tables" }</th><th scope="col">{ "table bytes" }</th><th scope="col">{ "bytes" }</th><th scope="col">{ "bits / byte" }</th></tr></thead>
                <tbody>
                    { row("global-bound", "entropy of the whole group (bound for one table)", None, (t.global_entropy_bits / 8.0).ceil() as u64) }
                    { row("global", "one global Huffman table", Some((t.global.tables, t.global.table_bytes)), t.global.bytes) }
                    { row("adaptive-bound", "Σ block entropies (bound for a table per block)", None, (t.block_entropy_bits / 8.0).ceil() as u64) }
                    { row("adaptive", "a Huffman table per block", Some((t.adaptive.tables, t.adaptive.table_bytes)), t.adaptive.bytes) }
                    { row("encoder", "the LMC encoder (raw, run, runs, splits)", None, t.encoder_bytes as u64) }
                </tbody>
            </table>
            <p class="muted">{ format!("The blocks coded one at a time add up to {sum} bytes; the group coded as one LMC stream is {} bytes.", t.encoder_bytes) }</p>
            <BarChart id="huffman-blocks" title={title} bars={Shared::new(bars)}
                      x_label="block" y_label="bytes written" height={220.0} />
        </section>
    }
}
