//! Lesson `ans` (NeuZip §2.2): the codec's rANS coder traced on the first exponents of a tensor
//! ([`rans::exponents`], [`rans::trace`]): step by step (buttons and ←/→), the encoder's state
//! per lane, renormalisation and the 16-bit words written, then the decoder reading them back;
//! total bits against a Huffman code and the entropy of the same symbols.

use super::source::{self, Arrived, Chosen, Tensors};
use super::{claim, js_number, param, param_num, write_state, Lesson, Listener};
use crate::ui::charts::{Bar, BarChart};
use crate::ui::shared::Shared;
use bitlens_lessons::rans::{self, Sizes, Trace, MAX_TRACE_SYMBOLS};
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// The sequence lengths offered.
const COUNTS: [usize; 5] = [16, 32, 64, 256, 1024];

/// Props of [`AnsLesson`].
#[derive(Properties, PartialEq)]
pub struct AnsProps {
    /// The tensors to choose from.
    pub tensors: Tensors,
    /// The state from the link: `tensor`, `n`, `step`.
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`AnsLesson`].
pub enum Msg {
    /// Another tensor.
    Tensor(String),
    /// Another sequence length.
    Count(usize),
    /// A step: −1, +1, first, last.
    Step(i64),
    /// A tensor's data arrived.
    Loaded(Arrived),
}

/// The lesson's state.
pub struct AnsLesson {
    chosen: Chosen,
    n: usize,
    step: usize,
    trace: Option<Rc<Trace>>,
    /// The sizes of the first [`MAX_TRACE_SYMBOLS`] exponents, for the claim.
    long: Option<Sizes>,
    error: Option<String>,
    _keys: Option<Listener>,
}

impl AnsLesson {
    fn load(&mut self, ctx: &Context<Self>) {
        self.trace = None;
        self.chosen
            .load(&ctx.props().tensors, ctx.link(), Msg::Loaded);
    }

    fn retrace(&mut self, ctx: &Context<Self>) {
        let t = self.chosen.source(&ctx.props().tensors);
        let (Some(t), Some(data)) = (t, self.chosen.data.clone()) else {
            return;
        };
        let f = t.float_format();
        let symbols = rans::exponents(&data, f, self.n);
        match rans::trace(&symbols) {
            Ok(tr) => {
                self.step = self.step.min(2 * tr.symbols.len());
                self.trace = Some(Rc::new(tr));
                self.error = None;
            }
            Err(e) => self.error = Some(format!("{}: {e}", t.name)),
        }
    }

    /// The sizes of the tensor's first [`MAX_TRACE_SYMBOLS`] exponents, once per tensor.
    fn measure(&mut self, ctx: &Context<Self>) {
        let t = self.chosen.source(&ctx.props().tensors);
        let (Some(t), Some(data)) = (t, self.chosen.data.clone()) else {
            return;
        };
        let long = rans::exponents(&data, t.float_format(), MAX_TRACE_SYMBOLS);
        self.long = rans::trace(&long).ok().map(|t| t.sizes);
    }

    fn write_link(&self) {
        write_state(
            Lesson::Ans,
            &[
                ("tensor", self.chosen.name.clone()),
                ("n", self.n.to_string()),
                ("step", self.step.to_string()),
            ],
        );
    }
}

impl Component for AnsLesson {
    type Message = Msg;
    type Properties = AnsProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = AnsLesson {
            chosen: Chosen::new(&p.tensors, param(&p.params, "tensor")),
            n: param_num(&p.params, "n")
                .unwrap_or(32usize)
                .clamp(1, MAX_TRACE_SYMBOLS),
            step: param_num(&p.params, "step").unwrap_or(0),
            trace: None,
            long: None,
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
                self.step = 0;
                self.load(ctx);
            }
            Msg::Count(n) => {
                self.n = n;
                self.step = 0;
                self.retrace(ctx);
            }
            Msg::Step(s) => {
                let last = self.trace.as_ref().map_or(0, |t| 2 * t.symbols.len()) as i64;
                let to = match s {
                    i64::MIN => 0,
                    i64::MAX => last,
                    s => (self.step as i64 + s).clamp(0, last),
                };
                if to as usize == self.step {
                    return false;
                }
                self.step = to as usize;
            }
            Msg::Loaded(a) => match self.chosen.arrive(a) {
                None => return false,
                Some(Ok(())) => {
                    self.measure(ctx);
                    self.retrace(ctx);
                }
                Some(Err(e)) => self.error = Some(e),
            },
        }
        self.write_link();
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let head = html! {
            <>
                <h2 id="lesson-ans-title">{ format!("{}. rANS, step by step", Lesson::Ans.number()) }</h2>
                <p class="lead">{ "rANS keeps the whole message in one integer state per lane. Coding a symbol of frequency f (out of 4096) multiplies the state by about 4096 / f — a frequent symbol adds few bits — and when the state would grow past 32 bits its low 16 bits are written out first (renormalisation). The decoder runs the same steps backwards, first symbol first." }</p>
            </>
        };
        let Some(tr) = self.trace.clone() else {
            return html! {
                <section class="lesson" id="lesson-ans" aria-labelledby="lesson-ans-title">
                    { head }
                    if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                    else { <p class="note">{ "Reading the tensor…" }</p> }
                </section>
            };
        };
        let link = ctx.link();
        let n = tr.symbols.len();
        let onn = link.callback(|e: Event| {
            let s: HtmlSelectElement = e.target_unchecked_into();
            Msg::Count(s.value().parse().unwrap_or(32))
        });
        html! {
            <section class="lesson" id="lesson-ans" aria-labelledby="lesson-ans-title" data-step={self.step.to_string()}>
                { head }
                { self.claim() }
                <div class="controls">
                    { source::picker(&ctx.props().tensors, &self.chosen.name, link.callback(Msg::Tensor)) }
                    <label class="control">{ "First " }
                        <select id="ans-count" onchange={onn}>
                            { for COUNTS.iter().map(|&c| html! { <option value={c.to_string()} selected={c == self.n}>{ c }</option> }) }
                        </select>{ " exponents" }
                    </label>
                    <span class="control" role="group" aria-label="Steps">
                        <button id="ans-first" class="button" onclick={link.callback(|_| Msg::Step(i64::MIN))} aria-label="First step">{ "|←" }</button>
                        <button id="ans-prev" class="button" disabled={self.step == 0} onclick={link.callback(|_| Msg::Step(-1))} aria-label="Previous step">{ "←" }</button>
                        <span class="step-count">{ format!("step {} of {}", self.step, 2 * n) }</span>
                        <button id="ans-next" class="button" disabled={self.step == 2 * n} onclick={link.callback(|_| Msg::Step(1))} aria-label="Next step">{ "→" }</button>
                        <button id="ans-last" class="button" onclick={link.callback(|_| Msg::Step(i64::MAX))} aria-label="Last step">{ "→|" }</button>
                    </span>
                </div>
                { symbols(&tr, self.step) }
                <div class="lesson-grid">
                    { current(&tr, self.step) }
                    { lanes(&tr, self.step) }
                </div>
                { words(&tr, self.step) }
                <div class="lesson-grid">
                    { freq_chart(&tr) }
                    { sizes(&tr.sizes) }
                </div>
            </section>
        }
    }
}

impl AnsLesson {
    fn claim(&self) -> Html {
        let measured = match &self.long {
            Some(s) => {
                let n = s.symbols as f64;
                let rans = 8.0 * s.rans_bytes as f64 / n;
                html! {
                    <span id="ans-claim" data-entropy={js_number(s.entropy_bits / n)} data-rans={js_number(rans)}
                          data-huffman={js_number((s.huffman_code_bits as f64 + 8.0 * s.huffman_table_bytes as f64) / n)}>
                        { format!("the first {} exponents of {} hold {:.3} bits of entropy each; rANS codes them in {rans:.3} bits each (block included), a Huffman code in {:.3}.",
                            s.symbols, self.chosen.name, s.entropy_bits / n,
                            (s.huffman_code_bits as f64 + 8.0 * s.huffman_table_bytes as f64) / n) }
                    </span>
                }
            }
            None => html! { { "tracing…" } },
        };
        claim(
            "NeuZip §2.1–2.2:",
            "exponents carry less than 3 bits of information in their 8 bits, and an asymmetric numeral system codes them close to that entropy, losslessly.",
            measured,
        )
    }
}

/// The lanes' states after `step` steps (encoding from 2^16, decoding from the final states).
fn states_at(tr: &Trace, step: usize) -> [u32; 4] {
    let n = tr.symbols.len();
    if step <= n {
        let mut s = [tr.lower_bound; 4];
        for e in &tr.encode[..step] {
            s[e.lane] = e.state_after;
        }
        s
    } else {
        let mut s = tr.final_states;
        for d in &tr.decode[..step - n] {
            s[d.lane] = d.state_after;
        }
        s
    }
}

/// The sequence, with what is coded or decoded so far.
fn symbols(tr: &Trace, step: usize) -> Html {
    let n = tr.symbols.len();
    let decoding = step > n;
    let coded = |i: usize| tr.encode[..step.min(n)].iter().any(|e| e.index == i);
    let current = if step == 0 {
        None
    } else if decoding {
        tr.decode.get(step - n - 1).map(|d| d.index)
    } else {
        tr.encode.get(step - 1).map(|e| e.index)
    };
    let decoded: Vec<u8> = if decoding {
        tr.decode[..step - n].iter().map(|d| d.symbol).collect()
    } else {
        Vec::new()
    };
    let joined = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
    html! {
        <div class="ans-symbols">
            <p>{ "Input (biased exponents, first to last):" }</p>
            <ol class="symbol-strip" id="ans-input" data-symbols={joined(&tr.symbols)} aria-label="The input exponents">
                { for tr.symbols.iter().enumerate().map(|(i, s)| html! {
                    <li class={classes!("sym", (!decoding && coded(i)).then_some("coded"), (current == Some(i)).then_some("current"))}
                        title={format!("symbol {i}: exponent {s}, lane {}", i % 4)}>{ s }</li>
                }) }
            </ol>
            <p>{ "Decoded so far:" }</p>
            <ol class="symbol-strip" id="ans-decoded" data-decoded={joined(&decoded)} aria-label="The decoded exponents">
                { for decoded.iter().enumerate().map(|(i, s)| html! {
                    <li class={classes!("sym", (current == Some(i)).then_some("current"))}>{ s }</li>
                }) }
            </ol>
        </div>
    }
}

/// The current step, with its arithmetic.
fn current(tr: &Trace, step: usize) -> Html {
    let n = tr.symbols.len();
    let (phase, text, state) = if step == 0 {
        (
            "start",
            format!(
                "Every lane starts at L = {}. Press → to code the last symbol first.",
                tr.lower_bound
            ),
            tr.lower_bound,
        )
    } else if step <= n {
        let e = &tr.encode[step - 1];
        let renorm = match e.emitted {
            Some(w) => format!(
                "the state {} is too large to take a symbol of frequency {}: write its low 16 bits 0x{w:04x} and shift it down; ",
                e.state_before, e.freq
            ),
            None => "no renormalisation; ".into(),
        };
        (
            "encode",
            format!(
                "Encode symbol {} (exponent {}, lane {}, frequency {}/4096, cumulative {}): {renorm}x = {} → (x / {}) · 4096 + x mod {} + {} = {}.",
                e.index, e.symbol, e.lane, e.freq, e.cum,
                e.emitted.map_or(e.state_before, |_| e.state_before >> 16), e.freq, e.freq, e.cum, e.state_after
            ),
            e.state_after,
        )
    } else {
        let d = &tr.decode[step - n - 1];
        let read = match d.read {
            Some(w) => format!("the state fell below 2^16: read the word 0x{w:04x} into it"),
            None => "no word read".into(),
        };
        (
            "decode",
            format!(
                "Decode symbol {} (lane {}): slot = {} mod 4096 = {} names exponent {}; x → freq · (x / 4096) + slot − cum, {read}: {}.",
                d.index, d.lane, d.state_before, d.slot, d.symbol, d.state_after
            ),
            d.state_after,
        )
    };
    html! {
        <div class="ans-step" id="ans-step" aria-live="polite" data-phase={phase} data-state={state.to_string()}>
            <h3>{ match phase { "encode" => "Encoding", "decode" => "Decoding", _ => "Start" } }</h3>
            <p>{ text }</p>
        </div>
    }
}

/// Each lane's state as its size in bits, between 16 and 32 (SVG).
fn lanes(tr: &Trace, step: usize) -> Html {
    let s = states_at(tr, step);
    let (w, row) = (720.0, 34.0);
    let h = row * 4.0 + 40.0;
    let x = |bits: f64| 90.0 + (bits - 16.0) / 16.0 * (w - 110.0);
    let summary = s
        .iter()
        .enumerate()
        .map(|(i, v)| format!("lane {i}: {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    html! {
        <figure class="chart" data-chart="ans-lanes" data-states={summary.clone()}>
            <figcaption><span class="chart-title">{ "The four lanes' states (size in bits)" }</span></figcaption>
            <svg viewBox={format!("0 0 {w} {h}")} role="img" aria-label={format!("States after step {step}: {summary}")}>
                <title>{ format!("States after step {step}") }</title>
                <desc>{ summary }</desc>
                { for s.iter().enumerate().map(|(i, &v)| {
                    let bits = f64::from(v.max(1)).log2();
                    let y = 10.0 + i as f64 * row;
                    html! {
                        <g class="lane">
                            <text x="4" y={(y + 18.0).to_string()}>{ format!("lane {i}") }</text>
                            <rect class="bar" x="90" y={y.to_string()} width={(x(bits) - 90.0).max(1.0).to_string()} height="24">
                                <title>{ format!("lane {i}: {v} = 0x{v:08x} ({bits:.2} bits)") }</title>
                            </rect>
                            <text x={(x(bits) + 4.0).to_string()} y={(y + 18.0).to_string()}>{ format!("{v} ({bits:.1} bits)") }</text>
                        </g>
                    }
                }) }
                <g class="axis">
                    { for [16.0, 20.0, 24.0, 28.0, 32.0].iter().map(|&b| html! {
                        <text x={x(b).to_string()} y={(h - 6.0).to_string()} text-anchor="middle">{ format!("2^{b}") }</text>
                    }) }
                </g>
            </svg>
        </figure>
    }
}

/// The words written so far (encoding), or the whole block (decoding).
fn words(tr: &Trace, step: usize) -> Html {
    let n = tr.symbols.len();
    let written: Vec<u16> = tr.encode[..step.min(n)]
        .iter()
        .filter_map(|e| e.emitted)
        .collect();
    html! {
        <p class="ans-words" id="ans-words" data-words={written.len().to_string()}>
            { format!("Words written so far: {} ({} bytes){}", written.len(), 2 * written.len(),
                if written.is_empty() { String::new() } else {
                    format!(": {}", written.iter().map(|w| format!("{w:04x}")).collect::<Vec<_>>().join(" "))
                }) }
            { format!(". The finished block is {} bytes: frequency table {}, four word counts and final states {}, words {}.",
                tr.bytes.len(), tr.sizes.rans_table_bytes, tr.sizes.rans_state_bytes, tr.sizes.rans_word_bytes) }
        </p>
    }
}

fn freq_chart(tr: &Trace) -> Html {
    let bars: Vec<Bar> = tr
        .table
        .iter()
        .map(|f| Bar {
            label: f.symbol.to_string(),
            value: f64::from(f.freq),
            color: "var(--accent, #3b6fd8)".into(),
            tip: format!(
                "exponent {}: {} times, frequency {}/4096, slots {}..{}",
                f.symbol,
                f.count,
                f.freq,
                f.cum,
                f.cum + f.freq
            ),
        })
        .collect();
    let title = format!(
        "Quantized frequencies of the {} exponents ({} symbols, entropy {:.3} bits each)",
        tr.symbols.len(),
        tr.table.len(),
        tr.sizes.entropy_bits / tr.symbols.len() as f64
    );
    html! {
        <BarChart id="ans-freqs" title={title} bars={Shared::new(bars)} x_label="biased exponent"
                  y_label="frequency (of 4096)" height={240.0} />
    }
}

fn sizes(s: &Sizes) -> Html {
    let n = s.symbols as f64;
    let huff = s.huffman_code_bits as f64 + 8.0 * s.huffman_table_bytes as f64;
    let rows = [
        ("entropy", "Shannon bound", s.entropy_bits),
        ("quantized", "with 12-bit frequencies", s.quantized_bits),
        ("rans-words", "rANS words", 8.0 * s.rans_word_bytes as f64),
        (
            "rans",
            "rANS block (table + states + words)",
            8.0 * s.rans_bytes as f64,
        ),
        ("huffman-codes", "Huffman codes", s.huffman_code_bits as f64),
        ("huffman", "Huffman codes + table", huff),
    ];
    html! {
        <figure class="costs" data-chart="ans-sizes">
            <figcaption><span class="chart-title">{ format!("The same {} symbols, three ways", s.symbols) }</span></figcaption>
            <table aria-label="Total bits against Huffman and entropy">
                <thead><tr><th scope="col">{ "" }</th><th scope="col">{ "bits" }</th><th scope="col">{ "bits / symbol" }</th></tr></thead>
                <tbody>
                    { for rows.iter().map(|(id, what, bits)| html! {
                        <tr data-size={*id} data-bits={js_number(*bits)}>
                            <th scope="row">{ *what }</th><td class="num">{ format!("{:.0}", bits.ceil()) }</td>
                            <td class="num">{ format!("{:.3}", bits / n) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            <p class="muted">{ "A short sequence pays mostly for the block's fixed parts (32 bytes of states and counts); the per-symbol cost approaches the entropy on long ones (see the measured figure above)." }</p>
        </figure>
    }
}
