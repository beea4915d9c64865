//! Lesson `float`: the anatomy of a number (LMC §2, NeuZip §2.1). One row per format (fp32,
//! bf16, fp16, fp8 E4M3, E5M2): its bits as buttons coloured by field — a click flips the bit
//! ([`anatomy::flip_bit`]) — with the value, its class and formula ([`anatomy::decompose`]); a
//! typed value rounded into every format ([`anatomy::encode`]) with the rounding error and
//! overflow / saturation; subnormal, largest, ∞ and NaN patterns; a real weight of a tensor.

use super::source::{self, Arrived, Chosen, Tensors};
use super::{claim, js_number, param, param_num, write_state, Lesson};
use bitlens_lessons::anatomy::{self, Class, Decomposed, Encoded, Flipped, Format, Overflow};
use bitlens_lessons::rans::exponents;
use bitlens_stats::entropy::bits_per_symbol;
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// Props of [`FloatLesson`].
#[derive(Properties, PartialEq)]
pub struct FloatProps {
    /// The tensors to pick weights from.
    pub tensors: Tensors,
    /// The state from the link: `tensor`, `index` (a weight) or `value` (a typed number).
    pub params: Rc<Vec<(String, String)>>,
}

/// Messages of [`FloatLesson`].
pub enum Msg {
    /// A value was typed.
    Typed(String),
    /// Saturating overflow on or off.
    Saturate(bool),
    /// Bit `.1` of format row `.0` was clicked.
    Flip(usize, u32),
    /// Every row set to one of the special patterns.
    Example(Example),
    /// Another tensor.
    Tensor(String),
    /// A tensor's data arrived.
    Loaded(Arrived),
    /// Take weight `index` of the tensor (`None`: a random one).
    Pick(Option<u64>),
}

/// The special patterns.
#[derive(Clone, Copy)]
pub enum Example {
    /// The smallest positive subnormal.
    Subnormal,
    /// The largest finite value.
    Largest,
    /// +∞ (NaN in E4M3, which has none).
    Infinity,
    /// The canonical NaN.
    Nan,
}

/// The lesson's state.
pub struct FloatLesson {
    input: String,
    saturate: bool,
    encoded: Vec<Encoded>,
    bits: Vec<u32>,
    flipped: Option<Flipped>,
    chosen: Chosen,
    index: Option<u64>,
    error: Option<String>,
    /// The loaded tensor's exponent entropy in bits per value, and its values.
    exponent_entropy: Option<(f64, usize)>,
}

fn format_label(f: Format) -> &'static str {
    match f {
        Format::F32 => "fp32",
        Format::Bf16 => "bf16",
        Format::F16 => "fp16",
        Format::E4m3 => "fp8 E4M3",
        Format::E5m2 => "fp8 E5M2",
    }
}

fn format_key(f: Format) -> &'static str {
    match f {
        Format::F32 => "f32",
        Format::Bf16 => "bf16",
        Format::F16 => "f16",
        Format::E4m3 => "e4m3",
        Format::E5m2 => "e5m2",
    }
}

fn class_name(c: Class) -> &'static str {
    match c {
        Class::Zero => "zero",
        Class::Subnormal => "subnormal",
        Class::Normal => "normal",
        Class::Infinity => "infinity",
        Class::Nan => "nan",
    }
}

/// A value as a person reads it.
fn shown(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+∞" } else { "−∞" }.into()
    } else if v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e7) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

impl FloatLesson {
    fn overflow(&self) -> Overflow {
        if self.saturate {
            Overflow::Saturating
        } else {
            Overflow::NonSaturating
        }
    }

    /// Rounds `x` into every format and shows those patterns.
    fn set_value(&mut self, x: f64) {
        let o = self.overflow();
        self.encoded = Format::ALL
            .iter()
            .map(|&f| anatomy::encode(x, f, o))
            .collect();
        self.bits = self.encoded.iter().map(|e| e.bits).collect();
        self.flipped = None;
    }

    fn source(&self, ctx: &Context<Self>) -> Option<source::TensorSource> {
        self.chosen.source(&ctx.props().tensors)
    }

    fn load(&mut self, ctx: &Context<Self>) {
        self.chosen
            .load(&ctx.props().tensors, ctx.link(), Msg::Loaded);
    }

    /// Takes weight `index` of the loaded tensor as the value.
    fn take_weight(&mut self, ctx: &Context<Self>, index: u64) {
        let (Some(t), Some(data)) = (self.source(ctx), self.chosen.data.clone()) else {
            return;
        };
        let w = t.width();
        let n = (data.len() / w) as u64;
        if n == 0 {
            return;
        }
        let index = index.min(n - 1);
        let at = index as usize * w;
        let bits = data[at..at + w]
            .iter()
            .rev()
            .fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
        let value = anatomy::decompose(bits, t.format()).value;
        self.index = Some(index);
        self.input = format!("{value}");
        self.set_value(value);
    }

    fn write_link(&self) {
        let mut pairs = vec![("tensor", self.chosen.name.clone())];
        match self.index {
            Some(i) => pairs.push(("index", i.to_string())),
            None => pairs.push(("value", self.input.clone())),
        }
        write_state(Lesson::Float, &pairs);
    }

    fn row(&self, ctx: &Context<Self>, i: usize, f: Format) -> Html {
        let d = anatomy::decompose(self.bits[i], f);
        let e = &self.encoded[i];
        let typed = d.bits == e.bits;
        let n = f.bits();
        let m = f.mantissa_bits();
        let cells = (0..n).rev().map(|bit| {
            let field = if bit == n - 1 {
                "sign"
            } else if bit >= m {
                "exponent"
            } else {
                "mantissa"
            };
            let on = d.bits >> bit & 1;
            let label = format!(
                "{} bit {bit} ({field}) is {on}: flip it",
                format_label(f)
            );
            let gap = bit == n - 1 || bit == m;
            html! {
                <>
                    <button class={classes!("bit", field)} data-bit={bit.to_string()} aria-label={label.clone()}
                            title={label} onclick={ctx.link().callback(move |_| Msg::Flip(i, bit))}>
                        { on.to_string() }
                    </button>
                    if gap { <span class="bit-gap" aria-hidden="true"></span> }
                </>
            }
        });
        let flags: Vec<&str> = [
            (typed && e.overflowed, "overflow"),
            (typed && e.saturated, "saturated"),
            (typed && e.underflowed, "underflow to 0"),
        ]
        .into_iter()
        .filter_map(|(on, s)| on.then_some(s))
        .collect();
        let error = if typed {
            if e.abs_error.is_nan() {
                "—".to_string()
            } else {
                format!(
                    "{} (relative {})",
                    shown(e.abs_error),
                    if e.rel_error.is_nan() {
                        "—".into()
                    } else {
                        format!("{:.3e}", e.rel_error)
                    }
                )
            }
        } else {
            "bits flipped".to_string()
        };
        html! {
            <tr class="format-row" data-format={format_key(f)} data-bits={d.bits.to_string()}
                data-value={js_number(d.value)} data-class={class_name(d.class)}>
                <th scope="row">{ format_label(f) }<br /><span class="muted">{ format!("1+{}+{} bits, bias {}", f.exponent_bits(), m, d.bias) }</span></th>
                <td class="bits" role="group" aria-label={format!("{} bits", format_label(f))}>{ for cells }</td>
                <td class="num value">{ shown(d.value) }</td>
                <td>{ class_name(d.class) }</td>
                <td class="formula">{ &d.formula.text }</td>
                <td class="num rounding" data-abs-error={js_number(e.abs_error)}>{ error }</td>
                <td>{ flags.join(", ") }</td>
            </tr>
        }
    }

    /// The NeuZip claim beside the exponent entropy of the loaded tensor.
    /// The exponent entropy of the loaded tensor (the symbols NeuZip codes).
    fn exponent_entropy(&self, ctx: &Context<Self>) -> Option<(f64, usize)> {
        let (t, data) = (self.source(ctx)?, self.chosen.data.as_ref()?);
        let e = exponents(data, t.float_format(), usize::MAX);
        let mut hist = [0u32; 256];
        e.iter().for_each(|&x| hist[x as usize] += 1);
        Some((bits_per_symbol(&hist), e.len()))
    }

    fn claim(&self, ctx: &Context<Self>) -> Html {
        let measured = match (self.source(ctx), self.exponent_entropy) {
            (Some(t), Some((per, n))) => {
                html! {
                    <span id="exponent-entropy" data-bits={js_number(per)}>
                        { format!("the exponent field of {} ({n} values) holds {per:.2} bits of entropy in its {} bits.",
                            t.name, t.float_format().exponent_bits()) }
                    </span>
                }
            }
            _ => html! { { "reading the tensor…" } },
        };
        claim(
            "NeuZip §2.1:",
            "the exponent bits of a network's weights carry less than 3 bits of information in 8 bits of capacity, while the mantissa bits are nearly incompressible.",
            measured,
        )
    }
}

impl Component for FloatLesson {
    type Message = Msg;
    type Properties = FloatProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = FloatLesson {
            input: String::new(),
            saturate: false,
            encoded: Vec::new(),
            bits: Vec::new(),
            flipped: None,
            chosen: Chosen::new(&p.tensors, param(&p.params, "tensor")),
            index: param_num(&p.params, "index").or(Some(0)),
            error: None,
            exponent_entropy: None,
        };
        match param_num::<f64>(&p.params, "value") {
            Some(v) if param(&p.params, "index").is_none() => {
                me.index = None;
                me.input = param(&p.params, "value").unwrap_or_default().to_owned();
                me.set_value(v);
            }
            _ => me.set_value(0.0),
        }
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
            Msg::Typed(s) => {
                self.input = s;
                self.index = None;
                match self.input.trim().parse::<f64>() {
                    Ok(v) => {
                        self.error = None;
                        self.set_value(v);
                    }
                    Err(_) => {
                        self.error = Some(format!("“{}” is not a number", self.input));
                        return true;
                    }
                }
            }
            Msg::Saturate(on) => {
                self.saturate = on;
                let x = self.encoded.first().map_or(0.0, |e| e.input);
                self.set_value(x);
            }
            Msg::Flip(i, bit) => {
                let f = Format::ALL[i];
                if let Some(fl) = anatomy::flip_bit(self.bits[i], bit, f) {
                    self.bits[i] = fl.after.bits;
                    self.flipped = Some(fl);
                }
                return true;
            }
            Msg::Example(ex) => {
                self.bits = Format::ALL
                    .iter()
                    .map(|&f| match ex {
                        Example::Subnormal => 1,
                        Example::Largest => f.max_finite_bits(),
                        Example::Infinity => f.infinity_bits().unwrap_or(f.nan_bits()),
                        Example::Nan => f.nan_bits(),
                    })
                    .collect();
                self.flipped = None;
                return true;
            }
            Msg::Tensor(name) => {
                self.chosen.name = name;
                self.index = Some(0);
                self.load(ctx);
            }
            Msg::Loaded(a) => match self.chosen.arrive(a) {
                None => return false,
                Some(Ok(())) => {
                    self.exponent_entropy = self.exponent_entropy(ctx);
                    if let Some(i) = self.index {
                        self.take_weight(ctx, i);
                    }
                }
                Some(Err(e)) => self.error = Some(e),
            },
            Msg::Pick(index) => {
                let n = self.source(ctx).map_or(0, |t| t.elements());
                let i = index.unwrap_or_else(|| (js_sys::Math::random() * n as f64) as u64);
                self.take_weight(ctx, i);
            }
        }
        self.write_link();
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let p = ctx.props();
        let oninput = link.callback(|e: InputEvent| {
            let i: HtmlInputElement = e.target_unchecked_into();
            Msg::Typed(i.value())
        });
        let onsat = link.callback(|e: Event| {
            let i: HtmlInputElement = e.target_unchecked_into();
            Msg::Saturate(i.checked())
        });
        let t = self.source(ctx);
        let weight = match (&t, self.index) {
            (Some(t), Some(i)) => format!("element {i} of {} ({})", t.name, t.dtype),
            _ => "a typed value".to_string(),
        };
        html! {
            <section class="lesson" id="lesson-float" aria-labelledby="lesson-float-title">
                <h2 id="lesson-float-title">{ format!("{}. Anatomy of a float", Lesson::Float.number()) }</h2>
                <p class="lead">{ "A float is three fields: a sign bit, an exponent (a power of two, stored with a bias) and a mantissa (the fraction after an implicit leading 1). Click any bit to flip it; type a value to see how each format rounds it." }</p>
                { self.claim(ctx) }
                <div class="controls">
                    <label class="control">{ "Value " }
                        <input id="float-value" type="text" inputmode="decimal" value={self.input.clone()} {oninput}
                               aria-describedby="float-source" />
                    </label>
                    <label class="control"><input id="float-saturate" type="checkbox" checked={self.saturate} onchange={onsat} />
                        { " saturate on overflow (OFP8 mode)" }</label>
                    { source::picker(&p.tensors, &self.chosen.name, link.callback(Msg::Tensor)) }
                    <button id="pick-weight" class="button" onclick={link.callback(|_| Msg::Pick(None))}>{ "Pick a real weight" }</button>
                </div>
                <p class="muted" id="float-source">{ format!("Showing {weight}.") }</p>
                if let Some(e) = &self.error { <p class="error-text" role="alert">{ e }</p> }
                <div class="controls" role="group" aria-label="Special values">
                    <span>{ "Special patterns in every format: " }</span>
                    <button class="button" id="ex-subnormal" onclick={link.callback(|_| Msg::Example(Example::Subnormal))}>{ "smallest subnormal" }</button>
                    <button class="button" id="ex-largest" onclick={link.callback(|_| Msg::Example(Example::Largest))}>{ "largest finite" }</button>
                    <button class="button" id="ex-inf" onclick={link.callback(|_| Msg::Example(Example::Infinity))}>{ "+∞ (E4M3: none, NaN)" }</button>
                    <button class="button" id="ex-nan" onclick={link.callback(|_| Msg::Example(Example::Nan))}>{ "NaN" }</button>
                </div>
                <div class="table-wrap">
                    <table class="formats" aria-label="The value in each format">
                        <thead><tr>
                            <th scope="col">{ "format" }</th><th scope="col">{ "bits: sign · exponent · mantissa" }</th>
                            <th scope="col">{ "value" }</th><th scope="col">{ "class" }</th><th scope="col">{ "formula" }</th>
                            <th scope="col">{ "rounding error" }</th><th scope="col">{ "note" }</th>
                        </tr></thead>
                        <tbody>
                            { for Format::ALL.iter().enumerate().filter(|(i, _)| *i < self.bits.len()).map(|(i, &f)| self.row(ctx, i, f)) }
                        </tbody>
                    </table>
                </div>
                <div class="legend">
                    <span class="legend-item"><span class="swatch sign"></span>{ "sign" }</span>
                    <span class="legend-item"><span class="swatch exponent"></span>{ "exponent" }</span>
                    <span class="legend-item"><span class="swatch mantissa"></span>{ "mantissa" }</span>
                </div>
                { flip_note(self.flipped.as_ref()) }
            </section>
        }
    }
}

/// What the last flip did.
fn flip_note(f: Option<&Flipped>) -> Html {
    let Some(f) = f else {
        return html! { <p class="flip-note muted" aria-live="polite">{ "Click a bit to flip it." }</p> };
    };
    let side = |d: &Decomposed| {
        format!(
            "{} ({}, {})",
            shown(d.value),
            class_name(d.class),
            d.bit_string
        )
    };
    html! {
        <p class="flip-note" id="flip-note" aria-live="polite" data-format={format_key(f.before.format)}
           data-bit={f.bit.to_string()} data-after-bits={f.after.bits.to_string()} data-after-value={js_number(f.after.value)}>
            { format!("Flipped {} bit {} ({}): {} → {}", format_label(f.before.format), f.bit, f.field, side(&f.before), side(&f.after)) }
        </p>
    }
}
