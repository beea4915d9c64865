//! The Values view's controls (layer, bit, aggregate, colour scale, zoom) and its legend: the
//! colour ramp of the picture shown with the values at its ticks.

use super::{Msg, Values, STEP};
use crate::model::format::number;
use crate::model::weightmap::colour::{rgb, Normalizer};
use crate::model::weightmap::{Aggregate, Quantity, Scale};
use bitlens_stats::weightmap::Layer;
use bitlens_tensors::format::ElementType;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::html::Scope;
use yew::prelude::*;

/// The layers a tensor of type `ty` offers (bits and exponents: plain dtypes only; changes: when
/// the previous checkpoint has the tensor).
fn layers(ty: ElementType, changes: bool) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![("values", "Values")];
    if let ElementType::Dtype(d) = ty {
        out.push(("bits", "Bit plane"));
        if d.float_layout().is_some() {
            out.push(("exponent", "Exponent"));
        }
    }
    if changes {
        out.push(("changes", "Changes"));
    }
    out
}

/// The layer's name in the select.
fn layer_name(layer: Layer) -> &'static str {
    match layer {
        Layer::Values => "values",
        Layer::BitPlane { .. } => "bits",
        Layer::Exponent => "exponent",
        Layer::Changes => "changes",
    }
}

/// Bits per lane of a plain dtype (the bit plane's range).
fn lane_bits(ty: ElementType) -> u8 {
    match ty {
        ElementType::Dtype(bitlens_tensors::Dtype::C64) => 32,
        ElementType::Dtype(d) => d.bits() as u8,
        ElementType::Ggml(_) => 32,
    }
}

/// The controls row.
pub fn view(
    link: &Scope<Values>,
    layer: Layer,
    aggregate: Aggregate,
    scale: Scale,
    ty: ElementType,
    pair: Option<&str>,
) -> Html {
    let top_bit = lane_bits(ty).saturating_sub(1);
    let on_layer = link.callback(move |e: Event| {
        let s: HtmlSelectElement = e.target_unchecked_into();
        Msg::Layer(match s.value().as_str() {
            "bits" => Layer::BitPlane { bit: top_bit },
            "exponent" => Layer::Exponent,
            "changes" => Layer::Changes,
            _ => Layer::Values,
        })
    });
    let on_bit = link.callback(move |e: Event| {
        let i: HtmlInputElement = e.target_unchecked_into();
        let bit = i.value().parse::<u8>().unwrap_or(0).min(top_bit);
        Msg::Layer(Layer::BitPlane { bit })
    });
    let on_aggregate = link.callback(|e: Event| {
        let s: HtmlSelectElement = e.target_unchecked_into();
        Msg::Aggregate(Aggregate::from_name(&s.value()).unwrap_or(Aggregate::Mean))
    });
    let on_scale = link.callback(|e: Event| {
        let s: HtmlSelectElement = e.target_unchecked_into();
        Msg::Scale(Scale::from_name(&s.value()).unwrap_or(Scale::Linear))
    });
    let current = layer_name(layer);
    html! {
        <div class="controls values-controls">
            <label class="control">{ "Show " }
                <select id="values-layer" onchange={on_layer}>
                    { for layers(ty, pair.is_some()).into_iter().map(|(name, label)| html! {
                        <option value={name} selected={name == current}>
                            { match pair {
                                Some(steps) if name == "changes" => format!("{label} {steps}"),
                                _ => label.to_string(),
                            } }
                        </option>
                    }) }
                </select>
            </label>
            if let Layer::BitPlane { bit } = layer {
                <label class="control">{ "Bit " }
                    <input id="values-bit" type="number" min="0" max={top_bit.to_string()}
                        value={bit.to_string()} onchange={on_bit} />
                    <span class="dim">{ format!(" (0 = least significant, {top_bit} = sign)") }</span>
                </label>
            }
            <label class="control">{ "A pixel shows " }
                <select id="values-aggregate" onchange={on_aggregate}>
                    { for Aggregate::ALL.into_iter().map(|a| html! {
                        <option value={a.name()} selected={a == aggregate}>{ a.label(layer) }</option>
                    }) }
                </select>
            </label>
            <label class="control">{ "Scale " }
                <select id="values-scale" onchange={on_scale}>
                    { for Scale::ALL.into_iter().map(|s| html! {
                        <option value={s.name()} selected={s == scale}>{ scale_label(s) }</option>
                    }) }
                </select>
            </label>
            <span class="control values-zoom">
                <button id="values-zoom-in" title="Zoom in (or the mouse wheel over the map)"
                    onclick={link.callback(|_| Msg::Zoom(STEP, -1.0, -1.0))}>{ "+" }</button>
                <button id="values-zoom-out" title="Zoom out"
                    onclick={link.callback(|_| Msg::Zoom(1.0 / STEP, -1.0, -1.0))}>{ "−" }</button>
                <button id="values-fit" title="The whole tensor" onclick={link.callback(|_| Msg::Fit)}>{ "Fit" }</button>
            </span>
        </div>
    }
}

/// A scale's label.
fn scale_label(s: Scale) -> &'static str {
    match s {
        Scale::Linear => "linear",
        Scale::SymLog => "symmetric log",
        Scale::Quantile => "quantile (by rank)",
    }
}

/// The legend: the ramp and the values at its ticks.
pub fn legend(normalizer: Option<&Normalizer>, q: &Quantity) -> Html {
    let Some(n) = normalizer else {
        return html! {};
    };
    let stops: Vec<String> = (0..=16)
        .map(|i| {
            let u = i as f32 / 16.0;
            let t = if n.diverging() { u * 2.0 - 1.0 } else { u };
            let [r, g, b] = rgb(t, n.diverging());
            format!("rgb({r},{g},{b}) {:.1}%", u * 100.0)
        })
        .collect();
    let gradient = format!(
        "background: linear-gradient(to right, {})",
        stops.join(", ")
    );
    let ticks = n.ticks();
    html! {
        <figure class="values-legend" id="values-legend">
            <figcaption>{ q.label() }</figcaption>
            <div class="values-ramp" style={gradient} aria-hidden="true"></div>
            <div class="values-ticks">
                { for ticks.iter().map(|&(t, v)| {
                    let at = if n.diverging() { (t + 1.0) / 2.0 } else { t } * 100.0;
                    html! { <span class="values-tick" style={format!("left: {at:.1}%")} data-value={v.to_string()}>{ number(f64::from(v), 4) }</span> }
                }) }
            </div>
        </figure>
    }
}
