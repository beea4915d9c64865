//! The LMC decoder, LMC paper §4.2: layout byte, block rows (Raw groups merged straight from the
//! payload, the others decoded into a row buffer first) and the tail; nibble-pair blocks (kind 6)
//! decode their pairs into a buffer of their own and join them with their lows.

use super::nibbles;
use super::{
    Params, KIND_HUFFMAN, KIND_HUFFMAN_RUNS, KIND_NIBBLE_PAIRS, KIND_RANS, KIND_RAW, KIND_RUN,
    KIND_SPLIT, LAYOUT_BYTES, LAYOUT_GROUPED, MIN_SPLIT_HALF, PREFETCH_LINES,
};
use crate::byte_group;
use crate::error::DecodeError;
use crate::huffman::{self, DecodeScratch, Prefetch};
use crate::rans;

/// Reusable LMC decoder (holds the decoding table and the group buffer; one per thread).
#[derive(Default)]
pub struct Decoder {
    grouped: Vec<u8>,
    scratch: DecodeScratch,
    /// A nibble-pairs block's decoded pairs (kind 6).
    pairs: Vec<u8>,
}

impl Decoder {
    /// A new decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the LMC stream `payload` into `out`, whose length must be the original length.
    /// `base_offset` is added to every offset reported in errors. The whole payload must be used.
    pub fn decode_into(
        &mut self,
        payload: &[u8],
        params: &Params,
        out: &mut [u8],
        base_offset: u64,
    ) -> Result<(), DecodeError> {
        let bs = params.block_bytes();
        let n = out.len();
        let w = match payload.first() {
            Some(&LAYOUT_GROUPED) => params.width.bytes(),
            Some(&LAYOUT_BYTES) => 1,
            Some(&v) => {
                return Err(DecodeError::BadHeader {
                    offset: base_offset,
                    field: "layout",
                    value: v as u64,
                })
            }
            None => {
                return Err(DecodeError::Truncated {
                    offset: base_offset,
                    needed: 1,
                    available: 0,
                })
            }
        };
        let mut pos = 1usize;
        self.scratch.prefetch = Prefetch::default();
        if w == 1 {
            for block in out.chunks_mut(bs) {
                pos += self.decode_block(&payload[pos..], block, base_offset + pos as u64)?;
            }
        } else {
            let e = byte_group::group_len(n, w);
            let row_bytes = bs * w;
            let mut grouped = std::mem::take(&mut self.grouped);
            if grouped.len() < row_bytes.min(e * w) {
                grouped.resize(row_bytes.min(e * w), 0);
            }
            let (elems, tail) = out.split_at_mut(e * w);
            let res = (|| {
                for row in elems.chunks_mut(row_bytes) {
                    let n = row.len() / w;
                    let row_at = (row.as_ptr() as usize, row.len());
                    // Raw blocks are merged straight from the payload; the others are decoded
                    // into the row buffer first. While a block decodes, the row's output and
                    // the last raw block before it are requested into the cache for the merge.
                    let mut raw_at = [None; 8];
                    let mut last_raw = &payload[..0];
                    for (k, block) in grouped[..row.len()].chunks_mut(n).enumerate() {
                        if payload.get(pos) == Some(&KIND_RAW) && payload.len() - pos > n {
                            raw_at[k] = Some(pos + 1);
                            last_raw = &payload[pos + 1..pos + 1 + n];
                            pos += 1 + n;
                        } else {
                            self.scratch.prefetch =
                                Prefetch::new(last_raw, 2 * PREFETCH_LINES).and(row_at.0, row_at.1);
                            pos += self.decode_block(
                                &payload[pos..],
                                block,
                                base_offset + pos as u64,
                            )?;
                        }
                    }
                    let mut groups: [&[u8]; 8] = [&[]; 8];
                    for (k, (g, block)) in
                        groups.iter_mut().zip(grouped.chunks(n)).take(w).enumerate()
                    {
                        *g = match raw_at[k] {
                            Some(at) => &payload[at..at + n],
                            None => block,
                        };
                    }
                    byte_group::merge_groups(&groups[..w], params.transform, row);
                }
                let rest = &payload[pos..];
                if rest.len() < tail.len() {
                    return Err(DecodeError::Truncated {
                        offset: base_offset + pos as u64,
                        needed: tail.len() as u64,
                        available: rest.len() as u64,
                    });
                }
                tail.copy_from_slice(&rest[..tail.len()]);
                pos += tail.len();
                Ok(())
            })();
            self.grouped = grouped;
            res?;
        }
        if pos != payload.len() {
            return Err(DecodeError::TrailingBytes {
                offset: base_offset + pos as u64,
                count: (payload.len() - pos) as u64,
            });
        }
        Ok(())
    }

    /// Decodes one block from the start of `data` into `out`; returns the bytes consumed.
    fn decode_block(
        &mut self,
        data: &[u8],
        out: &mut [u8],
        off: u64,
    ) -> Result<usize, DecodeError> {
        let truncated = |needed: usize| DecodeError::Truncated {
            offset: off,
            needed: needed as u64,
            available: data.len() as u64,
        };
        let &kind = data.first().ok_or(truncated(1))?;
        match kind {
            KIND_RAW => {
                let src = data.get(1..1 + out.len()).ok_or(truncated(1 + out.len()))?;
                out.copy_from_slice(src);
                Ok(1 + out.len())
            }
            KIND_RUN => {
                let &v = data.get(1).ok_or(truncated(2))?;
                out.fill(v);
                Ok(2)
            }
            KIND_SPLIT => {
                if out.len() / 2 < MIN_SPLIT_HALF {
                    return Err(DecodeError::BadBlockKind { offset: off, kind });
                }
                let (l, r) = out.split_at_mut(out.len() / 2);
                let a = 1 + self.decode_block(&data[1..], l, off + 1)?;
                let b = self.decode_block(&data[a..], r, off + a as u64)?;
                Ok(a + b)
            }
            KIND_HUFFMAN => {
                Ok(1 + huffman::decode_plain(&data[1..], out, &mut self.scratch, off + 1, off)?)
            }
            KIND_HUFFMAN_RUNS => {
                Ok(1 + huffman::decode_runs(&data[1..], out, &mut self.scratch, off + 1, off)?)
            }
            KIND_NIBBLE_PAIRS => {
                let &turn = data.get(1).ok_or(truncated(2))?;
                if turn > nibbles::MAX_TURN {
                    return Err(DecodeError::BadHeader {
                        offset: off + 1,
                        field: "nibble turn",
                        value: u64::from(turn),
                    });
                }
                let half = out.len() / 2;
                let mut pairs = std::mem::take(&mut self.pairs);
                pairs.resize(half, 0);
                let coded =
                    huffman::decode_plain(&data[2..], &mut pairs, &mut self.scratch, off + 2, off);
                let res = coded.and_then(|coded| {
                    let at = 2 + coded;
                    let lows_len = out.len() - half;
                    let lows = data.get(at..at + lows_len).ok_or(DecodeError::Truncated {
                        offset: off + at as u64,
                        needed: lows_len as u64,
                        available: (data.len() - at) as u64,
                    })?;
                    nibbles::join(&pairs, lows, turn, out);
                    Ok(at + lows_len)
                });
                self.pairs = pairs;
                res
            }
            KIND_RANS => {
                // The rANS block's offset, for its errors (saturating on 32-bit targets).
                let at = usize::try_from(off + 1).unwrap_or(usize::MAX);
                Ok(1 + rans::decode_block(&data[1..], out, at)?)
            }
            k => Err(DecodeError::BadBlockKind {
                offset: off,
                kind: k,
            }),
        }
    }
}
