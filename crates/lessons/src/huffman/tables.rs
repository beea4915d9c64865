//! One global Huffman table against a table per block over a whole byte group: the point of
//! LMC's block adaptivity (paper §4.2, "a new Huffman codebook for each block"), with the order-0
//! bounds of §4.1 for both, and the real encoder's size beside them.

use super::{check, lengths_of, plain_code, ExplainError};
use bitlens_codecs::byte_group::{self, Transform};
use bitlens_codecs::huffman::{code_cost_bits, histogram};
use bitlens_codecs::lmc::{self, Params, Width, MAX_BLOCK_LOG2, MIN_BLOCK_LOG2};
use bitlens_stats::entropy::cost_bits;

/// Costs of coding a whole byte group with some tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TableCosts {
    /// Tables stored.
    pub tables: usize,
    /// Bytes of the tables.
    pub table_bytes: usize,
    /// Σ count · length over the whole group.
    pub code_bits: u64,
    /// `table_bytes + code_bits / 8` (rounded up).
    pub bytes: u64,
}

/// One global table against one table per block, over a whole byte group.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TableComparison {
    /// Bytes in the group.
    pub len: usize,
    /// Block size.
    pub block_bytes: usize,
    /// Blocks in the group.
    pub blocks: usize,
    /// The order-0 entropy of the whole group, in bits (the bound for one global table).
    pub global_entropy_bits: f64,
    /// Σ over blocks of each block's order-0 entropy, in bits (the bound for a table per
    /// block, LMC §4.1).
    pub block_entropy_bits: f64,
    /// One code for the whole group (its histogram), one table.
    pub global: TableCosts,
    /// A code per block (the encoder's lengths for each block as one leaf), a table each.
    pub adaptive: TableCosts,
    /// Bytes the real LMC encoder writes for the group's blocks (with its Raw, Run, runs and
    /// split choices).
    pub encoder_bytes: usize,
}

/// Compares one global code with a code per block of `2^block_log2` bytes over `group` (one
/// byte group of a tensor, see [`group_bytes`]), under code-length limit `limit`.
pub fn compare_tables(
    group: &[u8],
    block_log2: u8,
    limit: u32,
) -> Result<TableComparison, ExplainError> {
    if !(MIN_BLOCK_LOG2..=MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(ExplainError::BlockSize(block_log2));
    }
    if group.is_empty() {
        return Err(ExplainError::Empty);
    }
    check(1, limit)?;
    let block_bytes = 1usize << block_log2;
    let hists: Vec<[u32; 256]> = group.chunks(block_bytes).map(histogram).collect();
    let mut total = [0u64; 256];
    for h in &hists {
        total
            .iter_mut()
            .zip(h)
            .for_each(|(t, &c)| *t += u64::from(c));
    }
    // Counts scaled to fit the code builder's u32 sum for groups past 4 GiB (none in a page).
    let scale = total
        .iter()
        .sum::<u64>()
        .div_ceil(u64::from(u32::MAX))
        .max(1);
    let global_hist: [u32; 256] =
        std::array::from_fn(|i| total[i].div_ceil(scale).min(u64::from(u32::MAX)) as u32);
    let global_code = plain_code(&global_hist, limit);
    let global_lengths = lengths_of(&global_code, 256);
    let global_bits: u64 = hists
        .iter()
        .map(|h| code_cost_bits(h, &global_lengths))
        .sum();
    let mut adaptive = TableCosts {
        tables: hists.len(),
        table_bytes: 0,
        code_bits: 0,
        bytes: 0,
    };
    for h in &hists {
        let c = plain_code(h, limit);
        adaptive.table_bytes += c.table_bytes;
        adaptive.code_bits += c.code_bits;
    }
    adaptive.bytes = adaptive.table_bytes as u64 + adaptive.code_bits.div_ceil(8);
    let params = Params {
        width: Width::W1,
        transform: Transform::None,
        block_log2,
        code_limit: limit as u8,
    };
    Ok(TableComparison {
        len: group.len(),
        block_bytes,
        blocks: hists.len(),
        global_entropy_bits: cost_bits(&total),
        block_entropy_bits: hists.iter().map(|h| cost_bits(h)).sum(),
        global: TableCosts {
            tables: 1,
            table_bytes: global_code.table_bytes,
            code_bits: global_bits,
            bytes: global_code.table_bytes as u64 + global_bits.div_ceil(8),
        },
        adaptive,
        // Minus the layout byte.
        encoder_bytes: lmc::encode(group, &params).len() - 1,
    })
}

/// Byte group `group` of `data` (elements of `width` bytes, after `transform`), as the LMC
/// encoder groups it ([`byte_group::split`]); the trailing partial element is left out.
pub fn group_bytes(
    data: &[u8],
    width: Width,
    transform: Transform,
    group: usize,
) -> Result<Vec<u8>, ExplainError> {
    let w = width.bytes();
    if group >= w {
        return Err(ExplainError::Group { group, width: w });
    }
    let e = byte_group::group_len(data.len(), w);
    let mut grouped = vec![0u8; e * w];
    byte_group::split(&data[..e * w], w, transform, &mut grouped);
    Ok(grouped[group * e..(group + 1) * e].to_vec())
}
