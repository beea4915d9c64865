//! The ggml tensor types a GGUF file may name (`GGML_TYPE_*` in llama.cpp's `ggml.h`), by id:
//! each type's name, how many elements one block holds and how many bytes it takes.
//!
//! The table follows `GGML_QUANT_SIZES` in gguf-py's `constants.py` (gguf 0.19.0), with one
//! exception: Q8_1. gguf-py still lists it as 40 bytes (two f32 scales), but ggml's `block_q8_1`
//! (`ggml-common.h`) has been two f16 (`d`, `s`) and 32 int8 quants = 36 bytes since 2024, and
//! ggml is what writes and reads the tensors. Ids no longer in ggml (4, 5: Q4_2/Q4_3; 31–33:
//! Q4_0_4_4/Q4_0_4_8/Q4_0_8_8; 36–38: IQ4_NL_4_4/4_8/8_8, repacked at load time, never in
//! files) are unknown.

use crate::format::GgmlType;
use crate::Dtype;

/// One row of the type table: id, name, elements per block, bytes per block.
struct Row(u32, &'static str, u32, u32);

/// Every known ggml type (`QK_K` = 256 for the K-quants and the IQ types).
const TABLE: [Row; 34] = [
    Row(0, "F32", 1, 4),
    Row(1, "F16", 1, 2),
    Row(2, "Q4_0", 32, 2 + 16),
    Row(3, "Q4_1", 32, 2 + 2 + 16),
    Row(6, "Q5_0", 32, 2 + 4 + 16),
    Row(7, "Q5_1", 32, 2 + 2 + 4 + 16),
    Row(8, "Q8_0", 32, 2 + 32),
    Row(9, "Q8_1", 32, 2 + 2 + 32),
    Row(10, "Q2_K", 256, 2 + 2 + 256 / 16 + 256 / 4),
    Row(11, "Q3_K", 256, 2 + 256 / 4 + 256 / 8 + 12),
    Row(12, "Q4_K", 256, 2 + 2 + 256 / 2 + 12),
    Row(13, "Q5_K", 256, 2 + 2 + 256 / 2 + 256 / 8 + 12),
    Row(14, "Q6_K", 256, 2 + 256 / 2 + 256 / 4 + 256 / 16),
    Row(15, "Q8_K", 256, 4 + 256 + 256 / 8),
    Row(16, "IQ2_XXS", 256, 2 + 256 / 4),
    Row(17, "IQ2_XS", 256, 2 + 256 / 4 + 256 / 32),
    Row(18, "IQ3_XXS", 256, 2 + 256 / 4 + 256 / 8),
    Row(19, "IQ1_S", 256, 2 + 256 / 8 + 256 / 16),
    Row(20, "IQ4_NL", 32, 2 + 16),
    Row(21, "IQ3_S", 256, 2 + 256 / 4 + 256 / 8 + 256 / 32 + 4),
    Row(22, "IQ2_S", 256, 2 + 256 / 4 + 256 / 16),
    Row(23, "IQ4_XS", 256, 2 + 2 + 256 / 2 + 256 / 64),
    Row(24, "I8", 1, 1),
    Row(25, "I16", 1, 2),
    Row(26, "I32", 1, 4),
    Row(27, "I64", 1, 8),
    Row(28, "F64", 1, 8),
    Row(29, "IQ1_M", 256, 256 / 8 + 256 / 16 + 256 / 32),
    Row(30, "BF16", 1, 2),
    Row(34, "TQ1_0", 256, 2 + 4 * 13),
    Row(35, "TQ2_0", 256, 2 + 64),
    Row(39, "MXFP4", 32, 1 + 16),
    Row(40, "NVFP4", 64, 4 + 32),
    Row(41, "Q1_0", 128, 2 + 16),
];

fn row(id: u32) -> Option<&'static Row> {
    TABLE.iter().find(|r| r.0 == id)
}

/// The ggml types by name (`GGML_TYPE_*`).
impl GgmlType {
    /// `GGML_TYPE_F32` = 0.
    pub const F32: GgmlType = GgmlType(0);
    /// `GGML_TYPE_F16` = 1.
    pub const F16: GgmlType = GgmlType(1);
    /// `GGML_TYPE_Q4_0` = 2.
    pub const Q4_0: GgmlType = GgmlType(2);
    /// `GGML_TYPE_Q4_1` = 3.
    pub const Q4_1: GgmlType = GgmlType(3);
    /// `GGML_TYPE_Q5_0` = 6.
    pub const Q5_0: GgmlType = GgmlType(6);
    /// `GGML_TYPE_Q5_1` = 7.
    pub const Q5_1: GgmlType = GgmlType(7);
    /// `GGML_TYPE_Q8_0` = 8.
    pub const Q8_0: GgmlType = GgmlType(8);
    /// `GGML_TYPE_Q8_1` = 9.
    pub const Q8_1: GgmlType = GgmlType(9);
    /// `GGML_TYPE_Q2_K` = 10.
    pub const Q2_K: GgmlType = GgmlType(10);
    /// `GGML_TYPE_Q3_K` = 11.
    pub const Q3_K: GgmlType = GgmlType(11);
    /// `GGML_TYPE_Q4_K` = 12.
    pub const Q4_K: GgmlType = GgmlType(12);
    /// `GGML_TYPE_Q5_K` = 13.
    pub const Q5_K: GgmlType = GgmlType(13);
    /// `GGML_TYPE_Q6_K` = 14.
    pub const Q6_K: GgmlType = GgmlType(14);
    /// `GGML_TYPE_Q8_K` = 15.
    pub const Q8_K: GgmlType = GgmlType(15);
    /// `GGML_TYPE_IQ2_XXS` = 16.
    pub const IQ2_XXS: GgmlType = GgmlType(16);
    /// `GGML_TYPE_IQ2_XS` = 17.
    pub const IQ2_XS: GgmlType = GgmlType(17);
    /// `GGML_TYPE_IQ3_XXS` = 18.
    pub const IQ3_XXS: GgmlType = GgmlType(18);
    /// `GGML_TYPE_IQ1_S` = 19.
    pub const IQ1_S: GgmlType = GgmlType(19);
    /// `GGML_TYPE_IQ4_NL` = 20.
    pub const IQ4_NL: GgmlType = GgmlType(20);
    /// `GGML_TYPE_IQ3_S` = 21.
    pub const IQ3_S: GgmlType = GgmlType(21);
    /// `GGML_TYPE_IQ2_S` = 22.
    pub const IQ2_S: GgmlType = GgmlType(22);
    /// `GGML_TYPE_IQ4_XS` = 23.
    pub const IQ4_XS: GgmlType = GgmlType(23);
    /// `GGML_TYPE_I8` = 24.
    pub const I8: GgmlType = GgmlType(24);
    /// `GGML_TYPE_I16` = 25.
    pub const I16: GgmlType = GgmlType(25);
    /// `GGML_TYPE_I32` = 26.
    pub const I32: GgmlType = GgmlType(26);
    /// `GGML_TYPE_I64` = 27.
    pub const I64: GgmlType = GgmlType(27);
    /// `GGML_TYPE_F64` = 28.
    pub const F64: GgmlType = GgmlType(28);
    /// `GGML_TYPE_IQ1_M` = 29.
    pub const IQ1_M: GgmlType = GgmlType(29);
    /// `GGML_TYPE_BF16` = 30.
    pub const BF16: GgmlType = GgmlType(30);
    /// `GGML_TYPE_TQ1_0` = 34.
    pub const TQ1_0: GgmlType = GgmlType(34);
    /// `GGML_TYPE_TQ2_0` = 35.
    pub const TQ2_0: GgmlType = GgmlType(35);
    /// `GGML_TYPE_MXFP4` = 39.
    pub const MXFP4: GgmlType = GgmlType(39);
    /// `GGML_TYPE_NVFP4` = 40.
    pub const NVFP4: GgmlType = GgmlType(40);
    /// `GGML_TYPE_Q1_0` = 41.
    pub const Q1_0: GgmlType = GgmlType(41);
}

impl GgmlType {
    /// Every known type, by increasing id.
    pub fn all() -> impl Iterator<Item = GgmlType> {
        TABLE.iter().map(|r| GgmlType(r.0))
    }

    /// True when ggml knows this id.
    pub fn is_known(self) -> bool {
        row(self.0).is_some()
    }

    /// ggml's name (`"Q4_K"`), or `None` for an unknown id.
    pub fn name(self) -> Option<&'static str> {
        row(self.0).map(|r| r.1)
    }

    /// Elements per block (1 for plain types), or `None` for an unknown id.
    pub fn block_elems(self) -> Option<u32> {
        row(self.0).map(|r| r.2)
    }

    /// Bytes per block, or `None` for an unknown id.
    pub fn block_bytes(self) -> Option<u32> {
        row(self.0).map(|r| r.3)
    }

    /// True for block-quantized types (blocks of more than one element with their scales).
    pub fn is_quantized(self) -> bool {
        self.block_elems().is_some_and(|b| b > 1)
    }

    /// The plain dtype with the same bytes (F32, F16, BF16, F64 and the signed integers), if any:
    /// tensors of these types are read as [`crate::format::ElementType::Dtype`].
    pub fn dtype(self) -> Option<Dtype> {
        Some(match self {
            GgmlType::F32 => Dtype::F32,
            GgmlType::F16 => Dtype::F16,
            GgmlType::BF16 => Dtype::BF16,
            GgmlType::F64 => Dtype::F64,
            GgmlType::I8 => Dtype::I8,
            GgmlType::I16 => Dtype::I16,
            GgmlType::I32 => Dtype::I32,
            GgmlType::I64 => Dtype::I64,
            _ => return None,
        })
    }

    /// The type with ggml's name `name` (`"Q4_K"`).
    pub fn from_name(name: &str) -> Option<GgmlType> {
        TABLE.iter().find(|r| r.1 == name).map(|r| GgmlType(r.0))
    }

    /// Bytes of `elems` elements laid out in whole blocks: `None` when the id is unknown,
    /// `elems` is not a multiple of the block size, or the size overflows.
    pub fn bytes_for(self, elems: u64) -> Option<u64> {
        let r = row(self.0)?;
        if !elems.is_multiple_of(u64::from(r.2)) {
            return None;
        }
        (elems / u64::from(r.2)).checked_mul(u64::from(r.3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_named_uniquely_and_round_trips() {
        let all: Vec<_> = GgmlType::all().collect();
        assert_eq!(all.len(), 34);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        for t in all {
            assert_eq!(GgmlType::from_name(t.name().unwrap()), Some(t));
        }
        assert!(!GgmlType(4).is_known() && !GgmlType(31).is_known() && !GgmlType(42).is_known());
        assert_eq!(GgmlType::Q4_K.block_bytes(), Some(144));
        assert_eq!(GgmlType::Q6_K.block_bytes(), Some(210));
        assert_eq!(GgmlType::IQ1_M.block_bytes(), Some(56));
        assert!(GgmlType::Q4_0.is_quantized() && !GgmlType::BF16.is_quantized());
        assert_eq!(GgmlType::Q8_0.bytes_for(64), Some(68));
        assert_eq!(GgmlType::Q8_0.bytes_for(33), None);
        assert_eq!(GgmlType::F32.bytes_for(u64::MAX), None);
    }
}
