//! Byte histograms of a block: the symbol counts that the code lengths (LMC paper §4.2) and the
//! encoder's entropy estimates (§4.1) are built from.

/// Byte histogram of `data` (eight sub-histograms, one per byte lane of a 64-bit word, so runs
/// of equal bytes do not serialize on one counter).
pub fn histogram(data: &[u8]) -> [u32; 256] {
    let mut h = [[0u32; 256]; 8];
    let (chunks, rest) = data.as_chunks::<8>();
    for c in chunks {
        for k in 0..8 {
            h[k][c[k] as usize] += 1;
        }
    }
    for &b in rest {
        h[0][b as usize] += 1;
    }
    let mut out = [0u32; 256];
    for (i, o) in out.iter_mut().enumerate() {
        *o = h.iter().map(|t| t[i]).sum();
    }
    out
}

/// The byte histograms of four parts of a block in one pass: the parts are read in lockstep,
/// so that consecutive counter updates go to different tables (as the eight lanes of
/// [`histogram`] do) while only eight sub-tables are zeroed and summed, not 32.
pub fn histograms4(parts: [&[u8]; 4]) -> [[u32; 256]; 4] {
    let mut h = Histograms4::new();
    h.add(parts);
    h.finish()
}

/// Byte histograms of four parts of a block, filled in one or more lockstep passes (see
/// [`histograms4`]). [`Histograms4::add_runs`] lets the LMC encoder count a sample of a block
/// first (to decide whether to code it at all) and the rest afterwards, so that no byte is
/// counted twice.
pub struct Histograms4 {
    /// Two sub-tables per part; consecutive bytes of a part alternate between them.
    t: [[[u32; 256]; 2]; 4],
}

impl Default for Histograms4 {
    fn default() -> Self {
        Self::new()
    }
}

impl Histograms4 {
    /// Empty histograms.
    #[inline]
    pub fn new() -> Self {
        Histograms4 {
            t: [[[0; 256]; 2]; 4],
        }
    }

    /// Counts every byte of the four parts (of any lengths).
    pub fn add(&mut self, parts: [&[u8]; 4]) {
        let m = parts.iter().map(|p| p.len()).min().unwrap_or(0) / 8;
        let chunks: [&[[u8; 8]]; 4] = std::array::from_fn(|k| &parts[k].as_chunks::<8>().0[..m]);
        self.count_chunks(chunks, 0..m);
        for (k, part) in parts.iter().enumerate() {
            for &b in &part[m * 8..] {
                self.t[k][0][b as usize] += 1;
            }
        }
    }

    /// Counts bytes `lo..hi` of every `stride`-byte run of each part (run `r` is bytes
    /// `r · stride..(r + 1) · stride`), for as many whole runs as the shortest part has.
    ///
    /// # Panics
    /// If `lo`, `hi` or `stride` is not a multiple of 8, `stride` is 0, or `lo > hi` or
    /// `hi > stride` (programming errors).
    pub fn add_runs(&mut self, parts: [&[u8]; 4], stride: usize, lo: usize, hi: usize) {
        assert!(
            [lo, hi, stride].iter().all(|x| x.is_multiple_of(8))
                && stride > 0
                && lo <= hi
                && hi <= stride,
            "Histograms4::add_runs: bad run bounds {lo}..{hi} of {stride}"
        );
        let runs = parts.iter().map(|p| p.len()).min().unwrap_or(0) / stride;
        let chunks: [&[[u8; 8]]; 4] =
            std::array::from_fn(|k| &parts[k].as_chunks::<8>().0[..runs * stride / 8]);
        let (per_run, lo, hi) = (stride / 8, lo / 8, hi / 8);
        for r in 0..runs {
            self.count_chunks(chunks, r * per_run + lo..r * per_run + hi);
        }
    }

    /// Counts the 8-byte words `range` of each part. Words that are zero in all four parts (the
    /// unchanged bytes of a sparse delta: XOR with the base) are only tallied and added to the
    /// zero counters at the end; counted byte by byte, every one of their bytes would wait on
    /// the previous increment of the same counter (a sparse delta compressed at ~1.7 GB/s of
    /// histogram against ~11 on weights).
    #[inline(always)]
    fn count_chunks(&mut self, chunks: [&[[u8; 8]]; 4], range: std::ops::Range<usize>) {
        let mut zero_words = 0u32;
        for c in range {
            let words = [chunks[0][c], chunks[1][c], chunks[2][c], chunks[3][c]];
            if words.iter().fold(0, |acc, w| acc | u64::from_ne_bytes(*w)) == 0 {
                zero_words += 1;
            } else {
                self.count(words);
            }
        }
        for [even, odd] in &mut self.t {
            even[0] += 4 * zero_words;
            odd[0] += 4 * zero_words;
        }
    }

    /// Counts one 8-byte word of each part.
    #[inline(always)]
    fn count(&mut self, words: [[u8; 8]; 4]) {
        for j in 0..8 {
            for (k, w) in words.iter().enumerate() {
                self.t[k][j & 1][w[j] as usize] += 1;
            }
        }
    }

    /// The histogram of everything counted so far, over all four parts.
    #[inline]
    pub fn total(&self) -> [u32; 256] {
        std::array::from_fn(|i| self.t.iter().flatten().map(|t| t[i]).sum())
    }

    /// The histogram of each part.
    #[inline]
    pub fn finish(&self) -> [[u32; 256]; 4] {
        let mut h = [[0u32; 256]; 4];
        self.finish_into(&mut h);
        h
    }

    /// [`Histograms4::finish`] into `h` (written in place: returning the arrays by value cost
    /// a chain of 1 KiB copies in the encoder).
    #[inline]
    pub fn finish_into(&self, h: &mut [[u32; 256]; 4]) {
        for (h, [a, b]) in h.iter_mut().zip(&self.t) {
            for (x, (a, b)) in h.iter_mut().zip(a.iter().zip(b)) {
                *x = a + b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_histograms_at_once_match_one_by_one() {
        let data: Vec<u8> = (0..40_007u32).map(|i| (i * i % 251 % 37) as u8).collect();
        for cuts in [[0, 10_000, 20_001, 30_003, 40_007], [0, 0, 5, 13, 40_007]] {
            let parts: [&[u8]; 4] = std::array::from_fn(|k| &data[cuts[k]..cuts[k + 1]]);
            let four = histograms4(parts);
            for k in 0..4 {
                assert_eq!(four[k], histogram(parts[k]), "part {k} of {cuts:?}");
            }
        }
    }

    /// Sparse parts (mostly zero words, in all four parts at once or in some) count as byte by
    /// byte: the zero-word tally adds up.
    #[test]
    fn sparse_parts_count_exactly() {
        let mut data = vec![0u8; 65_536];
        for i in (0..data.len()).step_by(997) {
            data[i] = (i % 255) as u8 + 1;
        }
        data[40_000..40_100].fill(7);
        let parts: [&[u8]; 4] = std::array::from_fn(|k| &data[k * 16_384..(k + 1) * 16_384]);
        let four = histograms4(parts);
        let mut h = Histograms4::new();
        h.add_runs(parts, 64, 0, 8);
        h.add_runs(parts, 64, 8, 64);
        for k in 0..4 {
            assert_eq!(four[k], histogram(parts[k]), "part {k}");
        }
        assert_eq!(h.finish(), four);
        assert_eq!(
            histograms4([&[0; 800], &[0; 800], &[0; 800], &[0; 800]])[2][0],
            800
        );
    }

    #[test]
    fn histograms_counted_in_runs_add_up_to_the_whole() {
        let data: Vec<u8> = (0..65_536u32).map(|i| (i * i % 251 % 37) as u8).collect();
        let parts: [&[u8]; 4] = std::array::from_fn(|k| &data[k * 16_384..(k + 1) * 16_384]);
        for (stride, cut) in [(64, 8), (32, 8), (64, 0), (64, 64), (4096, 2048)] {
            let mut h = Histograms4::new();
            h.add_runs(parts, stride, 0, cut);
            let mut sample = [0u32; 256];
            for part in parts {
                for run in part.chunks_exact(stride) {
                    run[..cut].iter().for_each(|&b| sample[b as usize] += 1);
                }
            }
            assert_eq!(h.total(), sample, "sample of stride {stride}, cut {cut}");
            h.add_runs(parts, stride, cut, stride);
            let whole = h.finish();
            for k in 0..4 {
                assert_eq!(whole[k], histogram(parts[k]), "part {k}, stride {stride}");
            }
        }
        // Runs beyond the shortest part are not counted.
        let mut h = Histograms4::new();
        h.add_runs(
            [&data[..64], &data[..128], &data[..128], &data[..128]],
            64,
            0,
            64,
        );
        assert_eq!(h.total().iter().sum::<u32>(), 4 * 64);
    }
}
