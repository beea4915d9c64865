//! What the worker tests share: statistics spans from a (offset, bytes, dtype) layout.

use bitlens_protocol::StatsSpan;
use bitlens_tensors::format::ElementType;
use bitlens_tensors::Dtype;

/// One span per `(offset, bytes, dtype)`, items numbered in order.
pub fn spans(layout: &[(u64, u64, Dtype)]) -> Vec<StatsSpan> {
    layout
        .iter()
        .enumerate()
        .map(|(item, &(offset, bytes, dtype))| StatsSpan {
            item,
            ty: ElementType::Dtype(dtype),
            offset,
            bytes,
        })
        .collect()
}
