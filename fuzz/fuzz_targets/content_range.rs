//! Arbitrary server answers judged by the shared Range rules: `ContentRange::parse` on any header
//! value never panics, and whatever it accepts is ordered and reads back the same; `check` on any
//! status / `Content-Range` / `Content-Length` against a request never panics, and accepts only a
//! 206 whose `Content-Range` is exactly the bytes asked for (and the probed size, and the length).
#![no_main]

use bitlens_remote::{check, Answer, ContentRange, RangeError};
use libfuzzer_sys::fuzz_target;

/// A little-endian u64 from up to 8 bytes at `at` (missing bytes are 0).
fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    for (i, v) in data.iter().skip(at).take(8).enumerate() {
        b[i] = *v;
    }
    u64::from_le_bytes(b)
}

fuzz_target!(|data: &[u8]| {
    // 27 bytes of request and answer fields, the rest is the Content-Range value.
    let flags = data.first().copied().unwrap_or(0);
    let status = u16::from_le_bytes([data.get(1).copied().unwrap_or(0), data.get(2).copied().unwrap_or(0)]);
    // Any request of at least one byte, even one running past u64::MAX.
    let start = u64_at(data, 3);
    let len = u64_at(data, 11).max(1);
    let size = (flags & 1 != 0).then(|| u64_at(data, 19) >> 2);
    let content_length = (flags & 2 != 0).then(|| u64_at(data, 19).rotate_left(7));
    let value = String::from_utf8_lossy(data.get(27..).unwrap_or_default());

    if let Ok(cr) = ContentRange::parse(&value) {
        assert!(cr.start <= cr.end && cr.end < cr.total, "{value}");
        let again = format!("bytes {}-{}/{}", cr.start, cr.end, cr.total);
        assert_eq!(ContentRange::parse(&again), Ok(cr));
    }

    let answer = Answer {
        status,
        content_range: (flags & 4 != 0).then_some(value.as_ref()),
        content_length,
    };
    match check(&answer, start, len, size) {
        Ok(total) => {
            assert_eq!(status, 206);
            let cr = ContentRange::parse(answer.content_range.expect("accepted with a header"))
                .expect("accepted header parses");
            assert_eq!((cr.start, cr.end, cr.total), (start, start + len - 1, total));
            assert!(size.is_none_or(|s| s == total));
            assert!(content_length.is_none_or(|n| n == len));
        }
        Err(RangeError::IgnoresRange { length }) => {
            assert_eq!(status, 200);
            assert_eq!(length, content_length);
        }
        Err(RangeError::Status { code }) => assert!(code != 200 && code != 206),
        Err(e) => {
            assert_eq!(status, 206, "{e}");
            // Every refusal says something.
            assert!(!e.to_string().is_empty());
        }
    }
});
