//! How often the page redraws while the statistics run: at most every [`MIN_MS`], less often when
//! a redraw costs the page's thread more than [`SHARE`] of the time between two ([`gap`]), and at
//! least every [`MAX_MS`].

/// Least milliseconds between two redraws of the page while the statistics run. The page feeds
/// the workers their next tasks between redraws, and redrawing a table of hundreds of tensors
/// after every finished task kept them waiting: in a 412-tensor GGUF the workers were idle
/// two thirds of the pass. On that file (Q4_0, 2 workers) the pass took 1.8–1.9 s at 250 ms,
/// 1.5–1.8 s at 500 ms and 1.3–1.8 s at 2 s (BENCHMARKS.md, "Quantized statistics at the
/// speed of the rest"); 500 ms keeps two progress steps a second.
pub const MIN_MS: f64 = 500.0;

/// A redraw while the statistics run may take at most this share of the page's thread: the next
/// waits at least the last one's cost divided by it. A table of thousands of tensors costs the
/// browser ~150 ms a redraw to lay out, and on two cores the page's thread, busy with it, takes a
/// core from the workers: a 2 472-tensor Q4_0 GGUF ran at 145–162 MB/s redrawn every 500 ms, and
/// at 243–262 with the table hidden (BENCHMARKS.md, "The page's GGUF statistics on a long
/// table").
pub const SHARE: f64 = 0.1;

/// Most milliseconds between two redraws while the statistics run, whatever the last one cost:
/// the progress moves at least this often (a redraw's cost is measured to a task after it, so
/// a long message or collection landing in between counts too).
pub const MAX_MS: f64 = 2000.0;

/// Least milliseconds from a redraw that cost `cost_ms` (from its start to its layout done) to the
/// next: `cost_ms / SHARE`, within [`MIN_MS`] and [`MAX_MS`].
pub fn gap(cost_ms: f64) -> f64 {
    (cost_ms / SHARE).clamp(MIN_MS, MAX_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_grows_with_the_redraws_cost_within_its_bounds() {
        assert_eq!(gap(0.0), MIN_MS);
        assert_eq!(gap(30.0), MIN_MS);
        assert_eq!(gap(120.0), 1200.0);
        assert_eq!(gap(900.0), MAX_MS);
    }
}
