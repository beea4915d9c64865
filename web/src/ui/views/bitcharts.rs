//! Per-bit-position data for the charts: bars most significant bit first, coloured and banded by
//! role (sign / exponent / mantissa), and per-bit series colours for line charts.

use crate::model::bits::{regions, roles, BitRole};
use crate::model::format::percent;
use crate::ui::charts::{Band, Bar};
use bitlens_tensors::Dtype;

/// Bars for per-bit ratios (`ratios[0]` = least significant bit), most significant bit first.
pub fn bit_bars(dtype: Dtype, ratios: &[f64], what: &str) -> (Vec<Bar>, Vec<Band>) {
    let r = roles(dtype);
    let n = ratios.len();
    let bars = (0..n)
        .rev()
        .map(|bit| {
            let role = r.get(bit).copied().unwrap_or(BitRole::Integer);
            Bar {
                label: bit.to_string(),
                value: ratios[bit],
                color: role.color().to_owned(),
                tip: format!(
                    "bit {bit} ({}): {what} {}",
                    role.name(),
                    percent(ratios[bit])
                ),
            }
        })
        .collect();
    let bands = regions(dtype)
        .into_iter()
        .filter(|&(_, lo, _)| lo < n)
        .map(|(role, lo, hi)| Band {
            label: role.name().to_owned(),
            from: n - 1 - hi.min(n - 1),
            to: n - 1 - lo,
            color: role.color().to_owned(),
        })
        .collect();
    (bars, bands)
}

/// Legend entries for the roles present in `dtype`.
pub fn role_legend(dtype: Dtype) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (role, _, _) in regions(dtype) {
        let e = (role.name().to_owned(), role.color().to_owned());
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// A distinct colour for bit `bit` of `dtype`: the role's hue, lighter towards less significant
/// bits of the same role.
pub fn bit_color(dtype: Dtype, bit: usize) -> String {
    let r = roles(dtype);
    let role = r.get(bit).copied().unwrap_or(BitRole::Integer);
    let same: Vec<usize> = (0..r.len()).filter(|&b| r[b] == role).collect();
    let rank = same.iter().position(|&b| b == bit).unwrap_or(0) as f64;
    let t = if same.len() > 1 {
        rank / (same.len() - 1) as f64
    } else {
        0.5
    };
    let (hue, sat) = match role {
        BitRole::Sign => (0.0, 75.0),
        BitRole::Exponent => (212.0, 70.0),
        BitRole::Mantissa => (125.0, 55.0),
        BitRole::Integer => (30.0, 10.0),
        BitRole::Packed => (275.0, 45.0),
    };
    // Most significant (highest rank) is darkest.
    let light = 70.0 - 45.0 * t;
    format!("hsl({hue:.0},{sat:.0}%,{light:.0}%)")
}
