//! Choosing a codec per tensor from a user's codec choice — one rule for the CLI and the page.
//!
//! Float-only codecs (NeuZip, BitSnap quantization) fall back to LMC for tensors of other dtypes
//! (integer position ids, masks), so a whole checkpoint can be stored with one choice. `auto`
//! chooses per tensor from its bytes ([`crate::auto`]).

use crate::codec::Codec;
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::neuzip;
use bitlens_codecs::{bitsnap, Width};
use bitlens_tensors::Dtype;

pub use bitlens_report::CodecKind;

/// A codec choice that cannot work, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChoiceError(pub String);

/// A user's codec choice for a whole checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecChoice {
    /// Which codec family.
    pub kind: CodecKind,
    /// NeuZip: kept mantissa bits (lossy when below the format's); `None` = lossless.
    pub mantissa_bits: Option<u32>,
    /// NeuZip lossy: normalization block size (32..=512, a power of two).
    pub norm_block: usize,
    /// BitSnap quantization: clusters (1..=16).
    pub clusters: u8,
}

impl CodecChoice {
    /// A choice with the defaults (lossless NeuZip, block 512, 16 clusters).
    pub fn new(kind: CodecKind) -> Self {
        CodecChoice {
            kind,
            mantissa_bits: None,
            norm_block: 512,
            clusters: 16,
        }
    }

    /// True when the choice stores some tensors lossily.
    pub fn is_lossy(&self) -> bool {
        self.kind == CodecKind::BitsnapQuant
            || (self.kind == CodecKind::Neuzip && self.mantissa_bits.is_some_and(|k| k <= 3))
    }

    /// The codec for a tensor of `dtype`. `auto` decides from the tensor's bytes
    /// ([`crate::compress_auto`]); from its dtype alone it is LMC.
    pub fn codec_for(&self, dtype: Dtype) -> Codec {
        let lmc = Codec::lmc_for_width(dtype.lane_bytes());
        match (self.kind, float_format(dtype)) {
            (CodecKind::Lmc | CodecKind::Auto, _) => lmc,
            (CodecKind::Stored, _) => Codec::Stored,
            (CodecKind::Neuzip, Some(format)) => {
                let k = self.mantissa_bits.unwrap_or(format.mantissa_bits());
                // Settings `check` refuses never get here; a mantissa width that another format
                // has but this one cannot take (7 on f16) stays lossless, with LMC.
                neuzip::Settings::new(format, k, self.norm_block).map_or(lmc, Codec::NeuZip)
            }
            (CodecKind::Bitsnap, _) => Codec::BitSnapDelta {
                width: Width::from_bytes(dtype.lane_bytes()).unwrap_or(Width::W1),
                entropy_coded: true,
            },
            (CodecKind::BitsnapQuant, Some(format)) => {
                match bitsnap::Clusters::new(usize::from(self.clusters)) {
                    Ok(clusters) => Codec::BitSnapQuant { format, clusters },
                    Err(_) => lmc, // refused by `check`
                }
            }
            (CodecKind::Neuzip | CodecKind::BitsnapQuant, None) => lmc,
        }
    }

    /// Rejects combinations that cannot work (`has_base`: a base checkpoint is given).
    pub fn check(&self, has_base: bool) -> Result<(), ChoiceError> {
        let fail = |m: &str| Err(ChoiceError(m.to_owned()));
        if let Some(k) = self.mantissa_bits {
            if self.kind != CodecKind::Neuzip {
                return fail("mantissa bits apply to the neuzip codec only");
            }
            if ![0, 1, 3, 7, 10, 23].contains(&k) {
                return fail(
                    "mantissa bits must be 0, 1 or 3 (lossy) or the format's full mantissa",
                );
            }
        }
        if !(32..=512).contains(&self.norm_block) || !self.norm_block.is_power_of_two() {
            return fail("the normalization block must be 32, 64, 128, 256 or 512");
        }
        if !(1..=16).contains(&self.clusters) {
            return fail("clusters must be 1..=16 (labels are 4 bits)");
        }
        if self.is_lossy() && has_base {
            return fail("lossy codecs do not take a base (a delta must be exact)");
        }
        if self.kind == CodecKind::Bitsnap && !has_base {
            return fail("the bitsnap codec stores changes against a base: give one");
        }
        Ok(())
    }
}

/// The NeuZip / BitSnap float format of a dtype, if it has one.
pub fn float_format(dtype: Dtype) -> Option<FloatFormat> {
    match dtype {
        Dtype::BF16 => Some(FloatFormat::Bf16),
        Dtype::F16 => Some(FloatFormat::F16),
        Dtype::F32 => Some(FloatFormat::F32),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_codecs_fall_back_to_lmc_for_integers() {
        let c = CodecChoice::new(CodecKind::Neuzip);
        assert!(matches!(c.codec_for(Dtype::BF16), Codec::NeuZip(_)));
        assert_eq!(c.codec_for(Dtype::I64), Codec::lmc_for_width(8));
        assert_eq!(
            "bitsnap-quant".parse::<CodecKind>().unwrap(),
            CodecKind::BitsnapQuant
        );
        assert!("zip".parse::<CodecKind>().is_err());
    }

    #[test]
    fn impossible_choices_are_refused() {
        let mut c = CodecChoice::new(CodecKind::Neuzip);
        c.mantissa_bits = Some(3);
        assert!(c.check(false).is_ok());
        assert!(c.check(true).is_err(), "lossy + base");
        c.mantissa_bits = Some(2);
        assert!(c.check(false).is_err());
        assert!(CodecChoice::new(CodecKind::Bitsnap).check(false).is_err());
        assert!(CodecChoice::new(CodecKind::Bitsnap).check(true).is_ok());
    }
}
