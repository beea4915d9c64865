//! How remote reads are cut into requests and retried: at most [`MAX_REQUEST`] bytes per request,
//! at most [`IN_FLIGHT`] requests at once, [`TRIES`] attempts for transient failures with
//! exponential backoff ([`backoff_ms`]); a file of at most [`SMALL_FILE`] bytes may be read whole
//! when its server ignores `Range` (only when the user asks).

/// Largest file that may be read whole when its server ignores `Range` (only on request: the CLI's
/// `--download-small`, the page's offer to download it).
pub const SMALL_FILE: u64 = 64 << 20;
/// Attempts per request; transient failures (5xx, network) are retried.
pub const TRIES: u32 = 3;
/// Requests in flight at most, over all remote files of one reader.
pub const IN_FLIGHT: usize = 6;
/// Largest single range request in bytes; longer reads are split.
pub const MAX_REQUEST: u64 = 8 << 20;

/// Milliseconds to wait before attempt `attempt + 1` after `attempt` failed (1-based): 200, 400,
/// 800, … capped at 5 s.
pub fn backoff_ms(attempt: u32) -> u64 {
    (100u64 << attempt.clamp(1, 6)).min(5_000)
}

/// The requests reading `[start, end)`, each at most `max` bytes (`max` ≥ 1), in order.
pub fn requests(start: u64, end: u64, max: u64) -> impl Iterator<Item = (u64, u64)> {
    let max = max.max(1);
    let mut pos = start;
    std::iter::from_fn(move || {
        (pos < end).then(|| {
            let len = (end - pos).min(max);
            let r = (pos, len);
            pos += len;
            r
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_cover_the_range_in_order() {
        let r: Vec<_> = requests(10, 35, 10).collect();
        assert_eq!(r, vec![(10, 10), (20, 10), (30, 5)]);
        assert_eq!(requests(5, 5, 10).count(), 0);
        assert_eq!(requests(0, 3, 0).count(), 3);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff_ms(1), 200);
        assert_eq!(backoff_ms(2), 400);
        assert_eq!(backoff_ms(40), 5_000);
    }
}
