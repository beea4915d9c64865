//! What a PyTorch object pickle means: its tensors (rebuild calls over persistent-id storages,
//! as `torch/_utils.py` and `torch/_tensor.py` define them), flattened with their dotted names,
//! and its other leaves as metadata. The walk is bounded: depth [`MAX_DEPTH`]; a budget of
//! [`BUDGET_PER_BYTE`] × the pickle's length (plus [`BUDGET_SLACK`]) for visits and the bytes
//! of the names and values it produces, so shared subtrees (memo gets of big containers or
//! strings) cannot blow up; and a container met again on its own path is
//! [`TorchError::Recursive`].

use super::pickle::{ObjId, Object, Pickle};
use super::TorchError;
use crate::format::{Data, ElementType, Entry, MetaValue};
use crate::naming::{state_dict_child, state_dict_leaf};
use crate::Dtype;
use std::collections::{HashMap, HashSet};

/// Deepest container nesting accepted.
pub const MAX_DEPTH: usize = 128;
/// Walk budget per pickle byte (a visit costs 1, a leaf its name's and string's bytes).
pub const BUDGET_PER_BYTE: usize = 4;
/// Walk budget on top of the per-byte budget.
pub const BUDGET_SLACK: usize = 1 << 16;

/// A storage as its persistent id names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageRef {
    /// Its key (zip member `data/<key>`, legacy key list entry).
    pub key: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its element count.
    pub numel: u64,
}

/// A tensor: a view into a storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorRef {
    /// Its dotted name.
    pub name: String,
    /// Index into [`Flat::storages`].
    pub storage: usize,
    /// Its element type (the storage's, or the `dtype` argument of `_rebuild_tensor_v3` over an
    /// untyped storage).
    pub dtype: Dtype,
    /// Offset of the view's storage inside the named storage (legacy storage views), in
    /// elements of `dtype`.
    pub base: u64,
    /// Elements of `dtype` in that view's storage (the whole storage when not a view).
    pub base_len: u64,
    /// First element of the tensor in the view's storage.
    pub storage_offset: u64,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its strides, in elements.
    pub strides: Vec<u64>,
}

/// A flattened object pickle.
#[derive(Debug, Default)]
pub struct Flat {
    /// The tensors, in pickle order.
    pub tensors: Vec<TensorRef>,
    /// The distinct storages, in first-use order.
    pub storages: Vec<StorageRef>,
    /// The non-tensor leaves.
    pub metadata: Vec<(String, MetaValue)>,
}

/// Flattens `p`'s object tree.
pub fn flatten(p: &Pickle, pickle_len: usize) -> Result<Flat, TorchError> {
    let mut w = Walker {
        p,
        flat: Flat::default(),
        on_path: vec![false; p.objects.len()],
        visits: 0,
        limit: pickle_len
            .saturating_mul(BUDGET_PER_BYTE)
            .saturating_add(BUDGET_SLACK),
        names: HashSet::new(),
        storage_index: HashMap::new(),
    };
    w.walk(p.root, String::new(), 0)?;
    Ok(w.flat)
}

/// Where the bytes of each storage of a [`Flat`] start in the file (the container has checked
/// that each storage's element count fits its bytes).
pub type StorageBytes = Vec<u64>;

/// Turns the tensors of `flat` into entries, given where each storage's bytes are; every view is
/// checked to stay inside its storage.
pub fn entries(flat: &Flat, at: &StorageBytes) -> Result<Vec<Entry>, TorchError> {
    flat.tensors.iter().map(|t| entry(flat, at, t)).collect()
}

fn entry(flat: &Flat, at: &StorageBytes, t: &TensorRef) -> Result<Entry, TorchError> {
    let (s, &offset) = flat
        .storages
        .get(t.storage)
        .zip(at.get(t.storage))
        .ok_or_else(|| TorchError::StorageMissing {
            key: t.name.clone(),
            what: "no location".into(),
        })?;
    let esize = u64::from(t.dtype.bits() / 8);
    let numel = t
        .shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(u128::from(d)));
    let out = |needed: u128| TorchError::ViewOutOfBounds {
        name: t.name.clone(),
        key: s.key.clone(),
        needed,
        available: t.base_len,
    };
    let base = offset + t.base * esize;
    let Some(numel) = numel else {
        return Err(out(u128::MAX));
    };
    if numel == 0 {
        let start = t.storage_offset.min(t.base_len);
        return Ok(Entry {
            name: t.name.clone(),
            ty: ElementType::Dtype(t.dtype),
            shape: t.shape.clone(),
            data: Data::Range {
                offset: base + start * esize,
                len: 0,
            },
        });
    }
    // The last element the view reaches (every dimension ≥ 1 here).
    let last = t
        .shape
        .iter()
        .zip(&t.strides)
        .try_fold(u128::from(t.storage_offset), |acc, (&d, &st)| {
            acc.checked_add(u128::from(d - 1) * u128::from(st))
        });
    match last {
        Some(last) if last < u128::from(t.base_len) => {}
        Some(last) => return Err(out(last + 1)),
        None => return Err(out(u128::MAX)),
    }
    // In bounds: every product below fits the storage, which fits the file (u64).
    let data = if contiguous(&t.shape, &t.strides) {
        Data::Range {
            offset: base + t.storage_offset * esize,
            len: numel as u64 * esize,
        }
    } else {
        Data::Strided {
            offset: base,
            len: t.base_len * esize,
            storage_offset: t.storage_offset,
            strides: t.strides.clone(),
        }
    };
    Ok(Entry {
        name: t.name.clone(),
        ty: ElementType::Dtype(t.dtype),
        shape: t.shape.clone(),
        data,
    })
}

/// Whether strides are row-major for the shape (dimensions of size 1 may have any stride).
fn contiguous(shape: &[u64], strides: &[u64]) -> bool {
    let mut expected: u128 = 1;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && u128::from(s) != expected {
            return false;
        }
        expected = expected.saturating_mul(u128::from(d));
    }
    true
}

/// The element type of a dtype global (`_rebuild_tensor_v3`'s argument, for the dtypes that have
/// no legacy storage class).
fn dtype_global(global: &str) -> Option<Dtype> {
    Some(match global {
        "torch.float32" => Dtype::F32,
        "torch.float16" => Dtype::F16,
        "torch.bfloat16" => Dtype::BF16,
        "torch.float64" => Dtype::F64,
        "torch.int64" => Dtype::I64,
        "torch.int32" => Dtype::I32,
        "torch.int16" => Dtype::I16,
        "torch.int8" => Dtype::I8,
        "torch.uint8" => Dtype::U8,
        "torch.bool" => Dtype::BOOL,
        "torch.complex64" => Dtype::C64,
        "torch.uint16" => Dtype::U16,
        "torch.uint32" => Dtype::U32,
        "torch.uint64" => Dtype::U64,
        "torch.float8_e4m3fn" => Dtype::F8_E4M3,
        "torch.float8_e5m2" => Dtype::F8_E5M2,
        "torch.float8_e4m3fnuz" => Dtype::F8_E4M3FNUZ,
        "torch.float8_e5m2fnuz" => Dtype::F8_E5M2FNUZ,
        "torch.float8_e8m0fnu" => Dtype::F8_E8M0,
        _ => return None,
    })
}

/// The element type of a storage global.
fn storage_dtype(global: &str) -> Option<Dtype> {
    Some(match global {
        "torch.FloatStorage" => Dtype::F32,
        "torch.HalfStorage" => Dtype::F16,
        "torch.BFloat16Storage" => Dtype::BF16,
        "torch.DoubleStorage" => Dtype::F64,
        "torch.IntStorage" => Dtype::I32,
        "torch.LongStorage" => Dtype::I64,
        "torch.ShortStorage" => Dtype::I16,
        "torch.CharStorage" => Dtype::I8,
        "torch.ByteStorage" | "torch.UntypedStorage" | "torch.storage.UntypedStorage" => Dtype::U8,
        "torch.BoolStorage" => Dtype::BOOL,
        "torch.ComplexFloatStorage" => Dtype::C64,
        _ => return None,
    })
}

struct Walker<'a> {
    p: &'a Pickle,
    flat: Flat,
    on_path: Vec<bool>,
    visits: usize,
    limit: usize,
    names: HashSet<String>,
    storage_index: HashMap<String, usize>,
}

impl Walker<'_> {
    fn obj(&self, id: ObjId) -> &Object {
        self.p.get(id)
    }

    fn charge(&mut self, units: usize) -> Result<(), TorchError> {
        self.visits = self.visits.saturating_add(units);
        if self.visits > self.limit {
            return Err(TorchError::TooManyItems { limit: self.limit });
        }
        Ok(())
    }

    /// Takes a leaf's name (charging its bytes); two leaves with one name are an error.
    fn claim(&mut self, name: &str) -> Result<(), TorchError> {
        self.charge(name.len())?;
        if self.names.insert(name.to_string()) {
            Ok(())
        } else {
            Err(TorchError::DuplicateName { name: name.into() })
        }
    }

    fn walk(&mut self, id: ObjId, path: String, depth: usize) -> Result<(), TorchError> {
        self.charge(1)?;
        if depth > MAX_DEPTH {
            return Err(TorchError::TooDeep {
                path,
                max: MAX_DEPTH,
            });
        }
        if self.on_path.get(id).copied().unwrap_or(false) {
            return Err(TorchError::Recursive { path });
        }
        match self.obj(id) {
            Object::Dict(pairs) => {
                let pairs = pairs.clone();
                self.on_path[id] = true;
                for (k, v) in pairs {
                    let key = self.key(k, &path)?;
                    self.walk(v, state_dict_child(&path, &key), depth + 1)?;
                }
                self.on_path[id] = false;
            }
            Object::List(items) | Object::Tuple(items) | Object::Set(items) => {
                let items = items.clone();
                self.charge(items.len())?;
                if let Some(values) = self.scalars(&items)? {
                    let name = state_dict_leaf(&path);
                    self.claim(&name)?;
                    self.flat.metadata.push((name, MetaValue::Array(values)));
                    return Ok(());
                }
                self.on_path[id] = true;
                for (i, v) in items.into_iter().enumerate() {
                    self.walk(v, state_dict_child(&path, &i.to_string()), depth + 1)?;
                }
                self.on_path[id] = false;
            }
            Object::Call { .. } | Object::PersId(_) => {
                let name = state_dict_leaf(&path);
                let t = self.tensor(id, &name, 0)?;
                self.claim(&name)?;
                self.flat.tensors.push(t);
            }
            Object::None => {}
            _ => {
                let name = state_dict_leaf(&path);
                if let Some(v) = self.scalar(id)? {
                    self.claim(&name)?;
                    self.flat.metadata.push((name, v));
                }
            }
        }
        Ok(())
    }

    /// A scalar leaf as metadata (`None` has no metadata value and is skipped; bytes are
    /// described, not copied).
    fn scalar(&mut self, id: ObjId) -> Result<Option<MetaValue>, TorchError> {
        if let Object::Str(s) = self.obj(id) {
            self.charge(s.len())?;
        }
        Ok(Some(match self.obj(id) {
            Object::Bool(b) => MetaValue::Bool(*b),
            Object::Int(i) => MetaValue::Int(*i),
            Object::BigInt(b) => MetaValue::Str(big_int(b)),
            Object::Float(f) => MetaValue::Float(*f),
            Object::Str(s) => MetaValue::Str(s.clone()),
            Object::Bytes(b) => MetaValue::Str(format!("<{} bytes>", b.len())),
            Object::Global(g) => MetaValue::Str(g.clone()),
            _ => return Ok(None),
        }))
    }

    /// The values of a list of scalars only (`betas: (0.9, 0.999)`, `params: [0, 1, 2]`).
    fn scalars(&mut self, items: &[ObjId]) -> Result<Option<Vec<MetaValue>>, TorchError> {
        let mut out = Vec::with_capacity(items.len());
        for &i in items {
            match self.scalar(i)? {
                Some(v) => out.push(v),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    fn key(&self, id: ObjId, path: &str) -> Result<String, TorchError> {
        Ok(match self.obj(id) {
            Object::Str(s) => s.clone(),
            Object::Int(i) => i.to_string(),
            Object::BigInt(b) => big_int(b),
            Object::Bool(true) => "True".into(),
            Object::Bool(false) => "False".into(),
            Object::None => "None".into(),
            Object::Float(f) => f.to_string(),
            _ => return Err(TorchError::BadKey { path: path.into() }),
        })
    }

    fn bad(&self, path: &str, what: impl Into<String>) -> TorchError {
        TorchError::BadTensor {
            path: path.into(),
            what: what.into(),
        }
    }

    fn args(&self, id: ObjId) -> Option<&[ObjId]> {
        match self.obj(id) {
            Object::Tuple(a) | Object::List(a) => Some(a),
            _ => None,
        }
    }

    fn int(&self, id: ObjId, path: &str, what: &str) -> Result<u64, TorchError> {
        match self.obj(id) {
            Object::Int(i) if *i >= 0 => Ok(*i as u64),
            _ => Err(self.bad(path, format!("{what} is not a non-negative int"))),
        }
    }

    fn ints(&self, id: ObjId, path: &str, what: &str) -> Result<Vec<u64>, TorchError> {
        let items = self
            .args(id)
            .ok_or_else(|| self.bad(path, format!("{what} is not a tuple")))?;
        items.iter().map(|&i| self.int(i, path, what)).collect()
    }

    /// A tensor from a rebuild call (or a bare storage, as a 1-D tensor over all of it).
    fn tensor(&mut self, id: ObjId, path: &str, depth: usize) -> Result<TensorRef, TorchError> {
        match self.obj(id) {
            Object::Call { func, args, .. } => {
                let (func, args) = (func.clone(), *args);
                self.call(&func, args, path, depth)
            }
            Object::PersId(_) => {
                let (storage, base, base_len) = self.storage(id, path)?;
                Ok(TensorRef {
                    name: path.into(),
                    storage,
                    dtype: self.flat.storages[storage].dtype,
                    base,
                    base_len,
                    storage_offset: 0,
                    shape: vec![base_len],
                    strides: vec![1],
                })
            }
            _ => Err(self.bad(path, "not a tensor rebuild call")),
        }
    }

    /// `func(*args)` interpreted as a tensor.
    fn call(
        &mut self,
        func: &str,
        args: ObjId,
        path: &str,
        depth: usize,
    ) -> Result<TensorRef, TorchError> {
        if depth > 4 {
            return Err(self.bad(path, "rebuild calls nested too deeply"));
        }
        let a = self
            .args(args)
            .ok_or_else(|| self.bad(path, "arguments are not a tuple"))?
            .to_vec();
        match func {
            "torch._utils._rebuild_tensor_v2"
            | "torch._utils._rebuild_tensor"
            | "torch._utils._rebuild_tensor_v3" => {
                let v3 = func.ends_with("v3");
                if a.len() < if v3 { 7 } else { 4 } {
                    return Err(self.bad(path, format!("{func}: too few arguments")));
                }
                let (storage, mut base, mut base_len) = self.storage(a[0], path)?;
                let storage_dtype = self.flat.storages[storage].dtype;
                // v3: (storage, offset, size, stride, requires_grad, hooks, dtype, …) over an
                // untyped (byte) storage, offsets and strides in elements of `dtype`.
                let dtype = if v3 {
                    let dtype = match self.obj(a[6]) {
                        Object::Global(g) => {
                            dtype_global(g).ok_or_else(|| TorchError::UnknownStorageType {
                                path: path.into(),
                                ty: g.clone(),
                            })?
                        }
                        _ => return Err(self.bad(path, "dtype is not a global")),
                    };
                    if storage_dtype != Dtype::U8 && storage_dtype != dtype {
                        return Err(self.bad(path, "typed storage of another dtype"));
                    }
                    let es = u64::from(dtype.bits() / 8);
                    let es0 = u64::from(storage_dtype.bits() / 8);
                    if (base * es0) % es != 0 {
                        return Err(self.bad(path, "storage view not aligned to the dtype"));
                    }
                    (base, base_len) = (base * es0 / es, base_len * es0 / es);
                    dtype
                } else {
                    storage_dtype
                };
                let storage_offset = self.int(a[1], path, "storage_offset")?;
                let shape = self.ints(a[2], path, "size")?;
                let strides = self.ints(a[3], path, "stride")?;
                if shape.len() != strides.len() {
                    return Err(self.bad(path, "size and stride differ in length"));
                }
                Ok(TensorRef {
                    name: path.into(),
                    storage,
                    dtype,
                    base,
                    base_len,
                    storage_offset,
                    shape,
                    strides,
                })
            }
            "torch._utils._rebuild_parameter" | "torch._utils._rebuild_parameter_with_state" => {
                let data = *a
                    .first()
                    .ok_or_else(|| self.bad(path, "parameter without data"))?;
                self.tensor(data, path, depth + 1)
            }
            // _rebuild_from_type_v2(func, new_type, args, state): func(*args), as new_type.
            "torch._tensor._rebuild_from_type_v2" => {
                let [f, ty, inner, ..] = a.as_slice() else {
                    return Err(self.bad(path, "_rebuild_from_type_v2 takes 4 arguments"));
                };
                let (Object::Global(f), Object::Global(_)) = (self.obj(*f), self.obj(*ty)) else {
                    return Err(self.bad(path, "_rebuild_from_type_v2 needs a function and a type"));
                };
                let f = f.clone();
                self.call(&f, *inner, path, depth + 1)
            }
            _ => Err(TorchError::UnsupportedObject {
                path: path.into(),
                func: func.into(),
            }),
        }
    }

    /// The storage a persistent id names: (index in `storages`, view start, view length), both in
    /// elements. `('storage', type, key, location, numel)` (zip), plus a sixth `view_metadata`
    /// (`None` or `(view_key, offset, size)`) in the legacy format.
    fn storage(&mut self, id: ObjId, path: &str) -> Result<(usize, u64, u64), TorchError> {
        let bad = |what: &str| TorchError::BadPersistentId {
            path: path.into(),
            what: what.into(),
        };
        let Object::PersId(pid) = self.obj(id) else {
            return Err(bad("the storage argument is not a persistent id"));
        };
        let items = self.args(*pid).ok_or_else(|| bad("not a tuple"))?.to_vec();
        if !(5..=6).contains(&items.len()) {
            return Err(bad("not 5 or 6 items"));
        }
        if self.obj(items[0]) != &Object::Str("storage".into()) {
            return Err(bad("first item is not 'storage'"));
        }
        let Object::Global(ty) = self.obj(items[1]) else {
            return Err(bad("storage type is not a global"));
        };
        let dtype = storage_dtype(ty).ok_or_else(|| TorchError::UnknownStorageType {
            path: path.into(),
            ty: ty.clone(),
        })?;
        let key = match self.obj(items[2]) {
            Object::Str(s) => s.clone(),
            Object::Int(i) => i.to_string(),
            _ => return Err(bad("key is not a string")),
        };
        if !matches!(self.obj(items[3]), Object::Str(_)) {
            return Err(bad("location is not a string"));
        }
        let Object::Int(numel) = *self.obj(items[4]) else {
            return Err(bad("element count is not an int"));
        };
        let numel = u64::try_from(numel).map_err(|_| bad("negative element count"))?;
        let (base, base_len) = match items.get(5).map(|&v| self.obj(v)) {
            None | Some(Object::None) => (0, numel),
            Some(Object::Tuple(view)) if view.len() == 3 => {
                let (Object::Int(off), Object::Int(len)) = (self.obj(view[1]), self.obj(view[2]))
                else {
                    return Err(bad("view offset and size are not ints"));
                };
                let (off, len) = (u64::try_from(*off), u64::try_from(*len));
                let (Ok(off), Ok(len)) = (off, len) else {
                    return Err(bad("negative view offset or size"));
                };
                if off.checked_add(len).is_none_or(|e| e > numel) {
                    return Err(bad("view runs past its storage"));
                }
                (off, len)
            }
            Some(_) => return Err(bad("view metadata is not None or a 3-tuple")),
        };
        let s = StorageRef { key, dtype, numel };
        let index = match self.storage_index.get(&s.key) {
            Some(&i) if self.flat.storages.get(i) == Some(&s) => i,
            Some(_) => return Err(TorchError::StorageConflict { key: s.key }),
            None => {
                self.storage_index
                    .insert(s.key.clone(), self.flat.storages.len());
                self.flat.storages.push(s);
                self.flat.storages.len() - 1
            }
        };
        Ok((index, base, base_len))
    }
}

/// A `LONG` too large for an `i64`, as hex of its little-endian two's complement bytes.
fn big_int(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().rev().map(|b| format!("{b:02x}")).collect();
    format!("0x{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides_are_contiguous() {
        assert!(contiguous(&[2, 3], &[3, 1]));
        assert!(contiguous(&[2, 1, 3], &[3, 99, 1]));
        assert!(contiguous(&[], &[]));
        assert!(!contiguous(&[2, 3], &[1, 2]));
    }
}
