//! The code-length table of a Huffman block, LMC paper §4.2 ("encoded in the compressed stream,
//! similar to RFC 1951"): the lengths run-length coded with a code-length code (CL), as laid out
//! in [`super`].

use super::bitio::{BitOut, TableIn};
use super::lengths::{build_lengths, encode_codes};
use super::lookup::{build_decode_table, SYMBOL_SHIFT};
use super::{CL_LIMIT, CL_SYMBOLS};

fn cl_tokens(lengths: &[u8], out: &mut Vec<(u8, u8)>) {
    out.clear();
    let n = lengths.len();
    let mut i = 0;
    while i < n {
        let l = lengths[i];
        let mut run = 1;
        while i + run < n && lengths[i + run] == l {
            run += 1;
        }
        if l == 0 {
            let mut rem = run;
            while rem > 0 {
                if rem >= 11 {
                    let r = rem.min(138);
                    out.push((15, (r - 11) as u8));
                    rem -= r;
                } else if rem >= 3 {
                    out.push((14, (rem - 3) as u8));
                    rem = 0;
                } else {
                    out.push((0, 0));
                    rem -= 1;
                }
            }
        } else {
            out.push((l, 0));
            let mut rem = run - 1;
            while rem >= 3 {
                let r = rem.min(6);
                out.push((13, (r - 3) as u8));
                rem -= r;
            }
            for _ in 0..rem {
                out.push((l, 0));
            }
        }
        i += run;
    }
}

fn cl_extra_bits(sym: u8) -> u32 {
    match sym {
        13 => 2,
        14 => 3,
        15 => 7,
        _ => 0,
    }
}

/// Serializes code `lengths` (≤ [`super::MAX_CODE_LEN`]) as described in the module docs, appending
/// whole bytes to `out`.
pub fn write_table(lengths: &[u8], out: &mut Vec<u8>) {
    let mut toks = Vec::with_capacity(lengths.len());
    cl_tokens(lengths, &mut toks);
    let mut freq = [0u32; CL_SYMBOLS];
    for &(s, _) in &toks {
        freq[s as usize] += 1;
    }
    let mut cl_len = [0u8; CL_SYMBOLS];
    build_lengths(&freq, CL_LIMIT, &mut cl_len);
    let mut cl_codes = [0u32; CL_SYMBOLS];
    encode_codes(&cl_len, &mut cl_codes);
    let bits_needed: usize = 48
        + toks
            .iter()
            .map(|&(s, _)| (cl_len[s as usize] as u32 + cl_extra_bits(s)) as usize)
            .sum::<usize>();
    let mut buf = vec![0u8; bits_needed.div_ceil(8) + 16];
    let mut w = BitOut::new(&mut buf);
    for &l in &cl_len {
        w.put_bits(l as u32, 3);
        w.flush();
    }
    for &(s, e) in &toks {
        w.put(cl_codes[s as usize]);
        w.put_bits(e as u32, cl_extra_bits(s));
        w.flush();
    }
    let n = w.finish();
    out.extend_from_slice(&buf[..n]);
}

/// Parses a code-length table for `lengths.len()` symbols from the start of `data`. Returns the
/// number of bytes it occupies.
pub fn read_table(data: &[u8], lengths: &mut [u8]) -> Result<usize, &'static str> {
    let mut r = TableIn {
        buf: data,
        bitpos: 0,
    };
    let mut cl_len = [0u8; CL_SYMBOLS];
    for l in cl_len.iter_mut() {
        *l = r.read(3)? as u8;
    }
    let mut cl_table = [0u16; 1 << CL_LIMIT];
    build_decode_table(&cl_len, CL_LIMIT, SYMBOL_SHIFT, &mut cl_table)
        .map_err(|_| "invalid code-length code")?;
    let n = lengths.len();
    let mut i = 0;
    while i < n {
        let e = cl_table[r.peek(CL_LIMIT) as usize];
        r.read((e & 15) as u32)?;
        let sym = (e >> 4) as u8;
        let (val, count) = match sym {
            0..=12 => (sym, 1),
            13 => {
                if i == 0 {
                    return Err("repeat code with no previous length");
                }
                (lengths[i - 1], 3 + r.read(2)? as usize)
            }
            14 => (0, 3 + r.read(3)? as usize),
            _ => (0, 11 + r.read(7)? as usize),
        };
        if i + count > n {
            return Err("code-length run past the end of the alphabet");
        }
        lengths[i..i + count].iter_mut().for_each(|l| *l = val);
        i += count;
    }
    Ok(r.bitpos.div_ceil(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_round_trip() {
        let mut l = vec![0u8; 260];
        for (i, x) in l.iter_mut().enumerate() {
            *x = [0, 0, 0, 0, 5, 5, 5, 5, 5, 9, 0, 12][i % 12];
        }
        let mut out = Vec::new();
        write_table(&l, &mut out);
        let mut back = vec![0u8; 260];
        let used = read_table(&out, &mut back).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(back, l);
    }
}
