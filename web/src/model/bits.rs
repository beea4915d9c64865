//! What each bit position of a lane means: sign, exponent or mantissa for floating-point types,
//! plain integer bits otherwise. Bit 0 is the least significant bit, as in the statistics.

use bitlens_tensors::Dtype;

/// The role of one bit position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitRole {
    /// The sign bit of a float or signed integer.
    Sign,
    /// An exponent bit.
    Exponent,
    /// A mantissa (fraction) bit.
    Mantissa,
    /// A bit of an integer's magnitude.
    Integer,
    /// A bit of a packed sub-byte type whose fields cross byte boundaries (F6).
    Packed,
}

impl BitRole {
    /// Lower-case name for labels and CSS classes.
    pub fn name(self) -> &'static str {
        match self {
            BitRole::Sign => "sign",
            BitRole::Exponent => "exponent",
            BitRole::Mantissa => "mantissa",
            BitRole::Integer => "integer",
            BitRole::Packed => "packed",
        }
    }

    /// Chart colour of the role: a CSS variable of web/style.css (a light and a dark value).
    pub fn color(self) -> &'static str {
        match self {
            BitRole::Sign => "var(--chart-sign)",
            BitRole::Exponent => "var(--chart-exponent)",
            BitRole::Mantissa => "var(--chart-mantissa)",
            BitRole::Integer => "var(--chart-integer)",
            BitRole::Packed => "var(--chart-packed)",
        }
    }
}

/// The role of every bit position of one lane of `dtype`, bit 0 first.
pub fn roles(dtype: Dtype) -> Vec<BitRole> {
    let lane_bits = 8 * dtype.lane_bytes();
    if matches!(dtype, Dtype::F6_E2M3 | Dtype::F6_E3M2) {
        return vec![BitRole::Packed; lane_bits];
    }
    if let Some(layout) = dtype.float_layout() {
        // A lane holds one value, or two 4-bit values for F4.
        let value_bits = layout.bits() as usize;
        let mut one = vec![BitRole::Mantissa; layout.mantissa_bits as usize];
        one.extend(vec![BitRole::Exponent; layout.exponent_bits as usize]);
        one.extend(vec![BitRole::Sign; layout.sign_bits as usize]);
        return (0..lane_bits).map(|b| one[b % value_bits]).collect();
    }
    let signed = matches!(dtype, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64);
    (0..lane_bits)
        .map(|b| {
            if signed && b == lane_bits - 1 {
                BitRole::Sign
            } else {
                BitRole::Integer
            }
        })
        .collect()
}

/// Runs of equal roles as `(role, first bit, last bit inclusive)`, most significant run first.
pub fn regions(dtype: Dtype) -> Vec<(BitRole, usize, usize)> {
    let r = roles(dtype);
    let mut out: Vec<(BitRole, usize, usize)> = Vec::new();
    for (bit, &role) in r.iter().enumerate().rev() {
        match out.last_mut() {
            Some((last, lo, _)) if *last == role => *lo = bit,
            _ => out.push((role, bit, bit)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_layout() {
        let r = roles(Dtype::BF16);
        assert_eq!(r.len(), 16);
        assert_eq!(r[15], BitRole::Sign);
        assert!(r[7..15].iter().all(|&x| x == BitRole::Exponent));
        assert!(r[..7].iter().all(|&x| x == BitRole::Mantissa));
        assert_eq!(
            regions(Dtype::BF16),
            vec![
                (BitRole::Sign, 15, 15),
                (BitRole::Exponent, 7, 14),
                (BitRole::Mantissa, 0, 6)
            ]
        );
    }

    #[test]
    fn other_types() {
        assert_eq!(regions(Dtype::F32)[1], (BitRole::Exponent, 23, 30));
        assert_eq!(regions(Dtype::I16)[0], (BitRole::Sign, 15, 15));
        assert_eq!(regions(Dtype::U8), vec![(BitRole::Integer, 0, 7)]);
        let f4 = roles(Dtype::F4);
        assert_eq!(
            (f4[3], f4[7], f4[0], f4[4]),
            (
                BitRole::Sign,
                BitRole::Sign,
                BitRole::Mantissa,
                BitRole::Mantissa
            )
        );
        assert_eq!(roles(Dtype::C64).len(), 32);
    }
}
