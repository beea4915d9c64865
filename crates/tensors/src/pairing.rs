//! Two checkpoints' tensors matched by name for a comparison (`bitlens diff`, the page's Compare
//! view): the pairs to compare, the names whose dtype or shape differ, and the names only one
//! side has.
//!
//! Sides are given as sequences of [`TensorKey`]s (for a [`crate::Checkpoint`], its
//! [`tensors`](crate::Checkpoint::tensors) in order); results are positions in those sequences.
//! Names are unique within a checkpoint; should a side repeat one anyway, B's first occurrence is
//! the one paired and a later one counts as only in B.

use crate::format::safetensors::header::TensorInfo;
use crate::format::{ElementType, Entry};
use std::collections::HashMap;

/// What pairing looks at in one tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorKey<'a> {
    /// Tensor name.
    pub name: &'a str,
    /// Element type (a plain dtype, or a ggml block type).
    pub ty: ElementType,
    /// Shape.
    pub shape: &'a [u64],
}

impl<'a> From<&'a TensorInfo> for TensorKey<'a> {
    fn from(t: &'a TensorInfo) -> Self {
        TensorKey {
            name: &t.name,
            ty: ElementType::Dtype(t.dtype),
            shape: &t.shape,
        }
    }
}

impl<'a> From<&'a Entry> for TensorKey<'a> {
    fn from(t: &'a Entry) -> Self {
        TensorKey {
            name: &t.name,
            ty: t.ty,
            shape: &t.shape,
        }
    }
}

/// The tensors of A and B matched by name, as positions in the sequences given to [`pair`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// `(a, b)` with the same name, dtype and shape, in A's order: these are compared.
    pub matched: Vec<(usize, usize)>,
    /// `(a, b)` with the same name but a different element type or shape, in A's order.
    pub mismatched: Vec<(usize, usize)>,
    /// Names only A has, in A's order.
    pub only_in_a: Vec<usize>,
    /// Names only B has, in B's order.
    pub only_in_b: Vec<usize>,
}

/// Matches the tensors of A with those of B by name.
pub fn pair<'a, 'b>(
    a: impl IntoIterator<Item = TensorKey<'a>>,
    b: impl IntoIterator<Item = TensorKey<'b>>,
) -> Pairing {
    let b: Vec<TensorKey<'b>> = b.into_iter().collect();
    let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(b.len());
    for (i, t) in b.iter().enumerate() {
        by_name.entry(t.name).or_insert(i);
    }
    let mut out = Pairing::default();
    let mut seen = vec![false; b.len()];
    for (ai, ta) in a.into_iter().enumerate() {
        match by_name.get(ta.name) {
            None => out.only_in_a.push(ai),
            Some(&bi) => {
                seen[bi] = true;
                let tb = &b[bi];
                if ta.ty == tb.ty && ta.shape == tb.shape {
                    out.matched.push((ai, bi));
                } else {
                    out.mismatched.push((ai, bi));
                }
            }
        }
    }
    out.only_in_b = (0..b.len()).filter(|&i| !seen[i]).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::GgmlType;
    use crate::Dtype;

    fn key<'a>(name: &'a str, dtype: Dtype, shape: &'a [u64]) -> TensorKey<'a> {
        TensorKey {
            name,
            ty: ElementType::Dtype(dtype),
            shape,
        }
    }

    #[test]
    fn matches_by_name_whatever_the_order() {
        let a = [key("x", Dtype::BF16, &[4]), key("y", Dtype::F32, &[2])];
        let b = [key("y", Dtype::F32, &[2]), key("x", Dtype::BF16, &[4])];
        let p = pair(a, b);
        assert_eq!(p.matched, [(0, 1), (1, 0)]);
        assert!(p.mismatched.is_empty() && p.only_in_a.is_empty() && p.only_in_b.is_empty());
    }

    #[test]
    fn dtype_or_shape_differences_are_mismatches() {
        let a = [
            key("dtype", Dtype::F32, &[2]),
            key("shape", Dtype::F32, &[2, 3]),
            key("same", Dtype::F16, &[]),
        ];
        let b = [
            key("same", Dtype::F16, &[]),
            key("shape", Dtype::F32, &[3, 2]),
            key("dtype", Dtype::F16, &[2]),
        ];
        let p = pair(a, b);
        assert_eq!(p.mismatched, [(0, 2), (1, 1)]);
        assert_eq!(p.matched, [(2, 0)]);
    }

    #[test]
    fn a_block_type_never_pairs_with_a_plain_dtype() {
        // GGML type 2 is Q4_0; 8 is Q8_0.
        let q4 = ElementType::Ggml(GgmlType(2));
        let a = [
            TensorKey {
                name: "w",
                ty: q4,
                shape: &[32],
            },
            TensorKey {
                name: "v",
                ty: q4,
                shape: &[32],
            },
        ];
        let b = [
            key("w", Dtype::F32, &[32]),
            TensorKey {
                name: "v",
                ty: q4,
                shape: &[32],
            },
        ];
        let p = pair(a, b);
        assert_eq!(p.mismatched, [(0, 0)]);
        assert_eq!(p.matched, [(1, 1)]);
        let q8 = ElementType::Ggml(GgmlType(8));
        let c = [TensorKey {
            name: "v",
            ty: q8,
            shape: &[32],
        }];
        assert_eq!(pair(a, c).mismatched, [(1, 0)]);
    }

    #[test]
    fn names_on_one_side_keep_their_side_order() {
        let a = [
            key("a2", Dtype::U8, &[1]),
            key("both", Dtype::U8, &[1]),
            key("a1", Dtype::U8, &[1]),
        ];
        let b = [
            key("b2", Dtype::U8, &[1]),
            key("both", Dtype::U8, &[1]),
            key("b1", Dtype::U8, &[1]),
        ];
        let p = pair(a, b);
        assert_eq!(p.only_in_a, [0, 2]);
        assert_eq!(p.only_in_b, [0, 2]);
        assert_eq!(p.matched, [(1, 1)]);
    }

    #[test]
    fn empty_sides() {
        let a = [key("x", Dtype::U8, &[1])];
        assert_eq!(pair(a, []).only_in_a, [0]);
        assert_eq!(pair([], a).only_in_b, [0]);
        assert_eq!(pair([], []), Pairing::default());
    }

    #[test]
    fn a_name_repeated_in_b_pairs_its_first_occurrence() {
        let a = [key("x", Dtype::U8, &[1])];
        let b = [key("x", Dtype::U8, &[1]), key("x", Dtype::U8, &[1])];
        let p = pair(a, b);
        assert_eq!(p.matched, [(0, 0)]);
        assert_eq!(p.only_in_b, [1]);
    }

    #[test]
    fn checkpoint_tensors_pair_across_files() {
        use crate::checkpoint::{tests::shard, Checkpoint};
        let a = Checkpoint::new(
            vec![
                shard("a-1.safetensors", &[("x", "BF16", &[4])]),
                shard("a-2.safetensors", &[("y", "F32", &[2])]),
            ],
            None,
        )
        .unwrap();
        let b = Checkpoint::new(
            vec![shard(
                "b.safetensors",
                &[("y", "F32", &[2]), ("x", "BF16", &[4])],
            )],
            None,
        )
        .unwrap();
        let p = pair(
            a.tensors().map(|(_, t)| t.into()),
            b.tensors().map(|(_, t)| t.into()),
        );
        assert_eq!(p.matched, [(0, 1), (1, 0)]);
    }
}
