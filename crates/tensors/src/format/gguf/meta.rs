//! GGUF key/values: the value types (`gguf_type` in ggml's `gguf.h`, `GGUFValueType` in
//! gguf-py) and their decoding into [`MetaValue`]s. Unsigned integers become `UInt`, signed
//! `Int`, f32/f64 `Float` (f32 widened exactly), strings `Str` (invalid UTF-8 replaced by U+FFFD,
//! so one odd token never refuses a model), arrays `Array`, nested arrays included (gguf-py
//! reads them; ggml refuses them).

use super::cursor::Cursor;
use super::GgufError;
use crate::format::MetaValue;
use serde::{Deserialize, Serialize};

/// Deepest nesting of arrays accepted (an array of arrays is depth 2).
pub const MAX_DEPTH: u32 = 8;
/// Most values (scalars, strings, arrays, array elements) read from one file's key/values:
/// each costs ~32 bytes of memory, so this bounds the metadata to ~512 MiB plus its strings.
/// Real tokenizers hold under a million.
pub const MAX_VALUES: u64 = 1 << 24;
/// Longest string accepted (real files: tokenizer JSON of a few tens of MiB at most).
pub const MAX_STRING: u64 = 256 << 20;

/// A GGUF value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueType {
    /// An unsigned 8-bit integer.
    U8,
    /// A signed 8-bit integer.
    I8,
    /// An unsigned 16-bit integer (little-endian, as every multi-byte field).
    U16,
    /// A signed 16-bit integer.
    I16,
    /// An unsigned 32-bit integer.
    U32,
    /// A signed 32-bit integer.
    I32,
    /// IEEE f32.
    F32,
    /// One byte; non-zero is true.
    Bool,
    /// A u64 length and that many bytes.
    String,
    /// An element type, a u64 count and the elements.
    Array,
    /// An unsigned 64-bit integer.
    U64,
    /// A signed 64-bit integer.
    I64,
    /// IEEE f64.
    F64,
}

impl ValueType {
    /// The type with GGUF id `id`.
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The GGUF id.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The fewest bytes a value of this type takes in a file (a string's length, an array's
    /// element type and count).
    pub fn min_bytes(self) -> u64 {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

/// One key/value of a GGUF file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// Its value type.
    pub ty: ValueType,
    /// For an array, its element type.
    pub elem_ty: Option<ValueType>,
    /// The value.
    pub value: MetaValue,
    /// Offset of the key's length field in the file.
    pub offset: u64,
}

/// Reads values, counting them against [`MAX_VALUES`].
pub(super) struct MetaReader<'c, 'a> {
    pub(super) cur: &'c mut Cursor<'a>,
    pub(super) values: u64,
}

impl MetaReader<'_, '_> {
    /// A length-prefixed string (`what` names it in errors).
    pub(super) fn string_bytes(&mut self, what: &'static str) -> Result<Vec<u8>, GgufError> {
        let offset = self.cur.pos();
        let len = self.cur.u64(what)?;
        let limit = self.cur.left().min(MAX_STRING);
        if len > limit {
            return Err(GgufError::StringTooLong { offset, len, limit });
        }
        Ok(self.cur.take(len, what)?.to_vec())
    }

    /// A length-prefixed string that must be UTF-8 (keys, tensor names).
    pub(super) fn name(&mut self, what: &'static str) -> Result<String, GgufError> {
        let offset = self.cur.pos();
        String::from_utf8(self.string_bytes(what)?)
            .map_err(|_| GgufError::InvalidUtf8 { offset, what })
    }

    fn count(&mut self) -> Result<(), GgufError> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(GgufError::TooManyValues { limit: MAX_VALUES });
        }
        Ok(())
    }

    /// A value type id.
    pub(super) fn value_type(&mut self, key: &str) -> Result<ValueType, GgufError> {
        let offset = self.cur.pos();
        let id = self.cur.u32("value type")?;
        ValueType::from_id(id).ok_or_else(|| GgufError::UnknownValueType {
            key: key.to_owned(),
            id,
            offset,
        })
    }

    /// A value of type `ty`; returns it and, for arrays, the element type.
    pub(super) fn value(
        &mut self,
        ty: ValueType,
        key: &str,
        depth: u32,
    ) -> Result<(MetaValue, Option<ValueType>), GgufError> {
        self.count()?;
        let c = &mut *self.cur;
        let v = match ty {
            ValueType::U8 => MetaValue::UInt(u64::from(c.array::<1>("u8")?[0])),
            ValueType::I8 => MetaValue::Int(i64::from(c.array::<1>("i8")?[0] as i8)),
            ValueType::U16 => MetaValue::UInt(u64::from(u16::from_le_bytes(c.array("u16")?))),
            ValueType::I16 => MetaValue::Int(i64::from(i16::from_le_bytes(c.array("i16")?))),
            ValueType::U32 => MetaValue::UInt(u64::from(c.u32("u32")?)),
            ValueType::I32 => MetaValue::Int(i64::from(i32::from_le_bytes(c.array("i32")?))),
            ValueType::U64 => MetaValue::UInt(c.u64("u64")?),
            ValueType::I64 => MetaValue::Int(i64::from_le_bytes(c.array("i64")?)),
            ValueType::F32 => MetaValue::Float(f64::from(f32::from_le_bytes(c.array("f32")?))),
            ValueType::F64 => MetaValue::Float(f64::from_le_bytes(c.array("f64")?)),
            ValueType::Bool => MetaValue::Bool(c.array::<1>("bool")?[0] != 0),
            ValueType::String => MetaValue::Str(
                String::from_utf8(self.string_bytes("string")?)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
            ValueType::Array => return self.array(key, depth + 1),
        };
        Ok((v, None))
    }

    fn array(
        &mut self,
        key: &str,
        depth: u32,
    ) -> Result<(MetaValue, Option<ValueType>), GgufError> {
        let offset = self.cur.pos();
        if depth > MAX_DEPTH {
            return Err(GgufError::NestingTooDeep {
                key: key.to_owned(),
                offset,
            });
        }
        let elem = self.value_type(key)?;
        let count = self.cur.u64("array length")?;
        if count > self.cur.left() / elem.min_bytes() {
            return Err(GgufError::ArrayTooLong {
                key: key.to_owned(),
                offset,
                count,
            });
        }
        // No allocation from the count: the vector grows with the values actually read.
        let mut items = Vec::new();
        for _ in 0..count {
            items.push(self.value(elem, key, depth)?.0);
        }
        Ok((MetaValue::Array(items), Some(elem)))
    }
}
