//! Judging the answer to one `Range` request: the `Content-Range` header ([`ContentRange`]), the
//! status, and whether the bytes are the ones asked for ([`check`], [`check_body`]). Every refusal
//! is a [`RangeError`] saying what the server did; [`RemoteError`] adds the URL and the attempts.

use crate::plan::SMALL_FILE;
use std::fmt;

/// A parsed `Content-Range: bytes START-END/TOTAL` (END inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentRange {
    /// First byte.
    pub start: u64,
    /// Last byte (inclusive).
    pub end: u64,
    /// Size of the whole file.
    pub total: u64,
}

/// Why a `Content-Range` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentRangeError {
    /// Not of the form `bytes …`.
    #[error("the unit is not `bytes`")]
    Unit,
    /// `bytes */TOTAL`: the server could not satisfy the range.
    #[error("the range was not satisfiable")]
    Unsatisfied,
    /// `…/*`: the server does not know the size.
    #[error("the total size is unknown (`*`)")]
    UnknownTotal,
    /// Missing parts or non-numbers.
    #[error("it is not `bytes START-END/TOTAL`")]
    Syntax,
    /// START > END, or END ≥ TOTAL.
    #[error("its first byte, last byte and total are out of order")]
    Order,
}

impl ContentRange {
    /// Parses a `Content-Range` header value.
    pub fn parse(value: &str) -> Result<ContentRange, ContentRangeError> {
        let rest = value
            .trim()
            .strip_prefix("bytes")
            .ok_or(ContentRangeError::Unit)?;
        let rest = rest
            .strip_prefix(' ')
            .ok_or(ContentRangeError::Syntax)?
            .trim();
        let (range, total) = rest.split_once('/').ok_or(ContentRangeError::Syntax)?;
        let (range, total) = (range.trim(), total.trim());
        if range == "*" {
            return Err(ContentRangeError::Unsatisfied);
        }
        if total == "*" {
            return Err(ContentRangeError::UnknownTotal);
        }
        let (start, end) = range.split_once('-').ok_or(ContentRangeError::Syntax)?;
        let number = |s: &str| {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ContentRangeError::Syntax);
            }
            s.parse::<u64>().map_err(|_| ContentRangeError::Syntax)
        };
        let cr = ContentRange {
            start: number(start)?,
            end: number(end)?,
            total: number(total)?,
        };
        if cr.start > cr.end || cr.end >= cr.total {
            return Err(ContentRangeError::Order);
        }
        Ok(cr)
    }
}

/// What a server answered to a `Range` request, as far as judging it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Range` header, if the answer had one (and, cross-origin, exposed it).
    pub content_range: Option<&'a str>,
    /// The `Content-Length` header, if any.
    pub content_length: Option<u64>,
}

/// The headers of an answer the rules read, owned, as any HTTP client gives them: build it with
/// [`Head::read`] from the status and a header lookup, judge it with [`Head::answer`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Range`.
    pub content_range: Option<String>,
    /// `Content-Length`, when it is a number.
    pub content_length: Option<u64>,
    /// A strong `ETag` (a weak one, `W/…`, may not go in `If-Range`, so it is left out).
    pub etag: Option<String>,
}

impl Head {
    /// Reads the headers through `header(name)` (any case of name the client accepts).
    pub fn read(status: u16, header: impl Fn(&str) -> Option<String>) -> Head {
        Head {
            status,
            content_range: header("content-range"),
            content_length: header("content-length").and_then(|v| v.trim().parse().ok()),
            etag: header("etag").filter(|t| !t.starts_with("W/")),
        }
    }

    /// The answer to judge with [`check`].
    pub fn answer(&self) -> Answer<'_> {
        Answer {
            status: self.status,
            content_range: self.content_range.as_deref(),
            content_length: self.content_length,
        }
    }
}

/// Why an answer (or the attempt to get one) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// 200 with the whole body: the server ignores `Range`.
    #[error("the server ignores Range requests (it answered 200 with the whole body{})",
        length.map_or_else(String::new, |n| format!(", {n} bytes")))]
    IgnoresRange {
        /// The body's length, when the server said.
        length: Option<u64>,
    },
    /// Any status but 200 and 206.
    #[error("HTTP {code}{}", reason(*code).map_or_else(String::new, |r| format!(" {r}")))]
    Status {
        /// The status code.
        code: u16,
    },
    /// 206 without a `Content-Range` header.
    #[error("206 answer without a Content-Range header (a cross-origin server must list it in Access-Control-Expose-Headers)")]
    NoContentRange,
    /// A `Content-Range` that cannot be read.
    #[error("unreadable Content-Range `{value}`: {error}")]
    BadContentRange {
        /// The header as sent.
        value: String,
        /// What is wrong with it.
        error: ContentRangeError,
    },
    /// A `Content-Range` for other bytes than asked, or another file size than probed.
    #[error("Content-Range `{value}` does not match the request (bytes {start}-{end} of {})",
        size.map_or_else(|| "the file".to_owned(), |s| format!("{s} bytes")))]
    Mismatch {
        /// The header as sent.
        value: String,
        /// First byte asked for.
        start: u64,
        /// Last byte asked for (inclusive).
        end: u64,
        /// The file size probed before, if known.
        size: Option<u64>,
    },
    /// The body ended before the bytes asked for.
    #[error("the body of bytes {start}-{} ended after {got} of {want} bytes", start.saturating_add(want.saturating_sub(1)))]
    ShortBody {
        /// First byte asked for.
        start: u64,
        /// Bytes received.
        got: u64,
        /// Bytes asked for.
        want: u64,
    },
    /// The body was longer than asked.
    #[error("the server sent {got} bytes where {want} were asked for")]
    LongBody {
        /// Bytes received.
        got: u64,
        /// Bytes asked for.
        want: u64,
    },
    /// A 200 answer to a request sent with `If-Range`: the file changed on the server since it
    /// was probed (its entity tag no longer matches).
    #[error("the file changed on the server since it was first read (its ETag {etag} no longer matches); its bytes are not mixed with the new ones")]
    Changed {
        /// The entity tag of the probe.
        etag: String,
    },
    /// The request failed before any answer (connection, DNS, TLS, timeout; in a browser also a
    /// CORS refusal, which it does not tell apart: [`RangeError::no_answer`]).
    #[error("{message}")]
    Network {
        /// What the client said.
        message: String,
    },
    /// The server answered (so, in a browser, its CORS headers allowed the page) and the
    /// connection broke while the body was arriving.
    #[error("the connection broke while bytes {start}-{} were arriving, after the server had answered (a network failure, not a refusal){}",
        start.saturating_add(want.saturating_sub(1)), detail(message))]
    Dropped {
        /// First byte asked for.
        start: u64,
        /// Bytes asked for.
        want: u64,
        /// What the client said.
        message: String,
    },
}

/// What a browser says when a request gets no answer it may read: it does not tell a network
/// failure from a refusal by CORS (both are the same `TypeError` to the page).
pub const NO_ANSWER: &str = "no answer the page may read: a network failure (server down or \
     unreachable, connection refused or dropped) or a CORS refusal (no Access-Control-Allow-Origin \
     allowing this page) — the browser does not say which";

/// ` (message)`, or nothing for an empty one.
fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(" ({message})")
    }
}

impl RangeError {
    /// A browser's request that failed before any answer ([`NO_ANSWER`]); `message`: what the
    /// browser said (may be empty).
    pub fn no_answer(message: &str) -> RangeError {
        RangeError::Network {
            message: format!("{NO_ANSWER}{}", detail(message)),
        }
    }

    /// True for failures worth another attempt: 5xx, 408, 429, network errors, a short body, a
    /// connection dropped mid-body.
    pub fn transient(&self) -> bool {
        match self {
            RangeError::Status { code } => *code >= 500 || *code == 408 || *code == 429,
            RangeError::Network { .. }
            | RangeError::ShortBody { .. }
            | RangeError::Dropped { .. } => true,
            _ => false,
        }
    }

    /// For [`RangeError::IgnoresRange`]: true when the file is known to be at most
    /// [`SMALL_FILE`] bytes, so reading it whole may be offered.
    pub fn small_enough(&self) -> bool {
        matches!(self, RangeError::IgnoresRange { length: Some(n) } if *n <= SMALL_FILE)
    }
}

/// The reason phrase of common status codes.
fn reason(code: u16) -> Option<&'static str> {
    Some(match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        410 => "Gone",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}

/// Checks the answer to a request for `len` bytes (≥ 1) at `start`; `size` is the probed file size
/// (None for the probe itself). Returns the file size the server reported.
pub fn check(answer: &Answer, start: u64, len: u64, size: Option<u64>) -> Result<u64, RangeError> {
    match answer.status {
        206 => {}
        200 => {
            return Err(RangeError::IgnoresRange {
                length: answer.content_length,
            })
        }
        code => return Err(RangeError::Status { code }),
    }
    let value = answer.content_range.ok_or(RangeError::NoContentRange)?;
    let cr = ContentRange::parse(value).map_err(|error| RangeError::BadContentRange {
        value: value.into(),
        error,
    })?;
    let end = start.saturating_add(len.max(1) - 1);
    if cr.start != start || cr.end != end || size.is_some_and(|s| s != cr.total) {
        return Err(RangeError::Mismatch {
            value: value.into(),
            start,
            end,
            size,
        });
    }
    if let Some(n) = answer.content_length {
        if n != len {
            return Err(if n < len {
                RangeError::ShortBody {
                    start,
                    got: n,
                    want: len,
                }
            } else {
                RangeError::LongBody { got: n, want: len }
            });
        }
    }
    Ok(cr.total)
}

/// Checks that a body of `got` bytes answers a request for `want` bytes at `start`.
pub fn check_body(start: u64, got: u64, want: u64) -> Result<(), RangeError> {
    match got.cmp(&want) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less => Err(RangeError::ShortBody { start, got, want }),
        std::cmp::Ordering::Greater => Err(RangeError::LongBody { got, want }),
    }
}

/// A failed read of a URL: the cause and the attempts made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteError {
    /// The URL.
    pub url: String,
    /// The last attempt's cause.
    pub error: RangeError,
    /// Attempts made.
    pub tries: u32,
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.url, self.error)?;
        if self.tries > 1 {
            write!(f, " (after {} tries)", self.tries)?;
        }
        Ok(())
    }
}

impl std::error::Error for RemoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn answer(status: u16, cr: Option<&str>, len: Option<u64>) -> Answer<'_> {
        Answer {
            status,
            content_range: cr,
            content_length: len,
        }
    }

    #[test]
    fn content_ranges_parse() {
        let ok = ContentRange {
            start: 0,
            end: 7,
            total: 100,
        };
        assert_eq!(ContentRange::parse("bytes 0-7/100"), Ok(ok));
        assert_eq!(ContentRange::parse(" bytes  0 - 7 / 100 "), Ok(ok));
        assert_eq!(
            ContentRange::parse("bytes */100"),
            Err(ContentRangeError::Unsatisfied)
        );
        assert_eq!(
            ContentRange::parse("bytes 0-7/*"),
            Err(ContentRangeError::UnknownTotal)
        );
        assert_eq!(ContentRange::parse("0-7/100"), Err(ContentRangeError::Unit));
        assert_eq!(
            ContentRange::parse("bytes 8-7/100"),
            Err(ContentRangeError::Order)
        );
        assert_eq!(
            ContentRange::parse("bytes 0-100/100"),
            Err(ContentRangeError::Order)
        );
        for bad in [
            "bytes",
            "bytes 0-7",
            "bytes -7/10",
            "bytes +1-7/10",
            "bytes 0-99999999999999999999/1",
        ] {
            assert_eq!(
                ContentRange::parse(bad),
                Err(ContentRangeError::Syntax),
                "{bad}"
            );
        }
    }

    #[test]
    fn answers_are_judged() {
        let ok = answer(206, Some("bytes 10-19/100"), Some(10));
        assert_eq!(check(&ok, 10, 10, None), Ok(100));
        assert_eq!(check(&ok, 10, 10, Some(100)), Ok(100));
        assert!(matches!(
            check(&ok, 10, 10, Some(99)),
            Err(RangeError::Mismatch { .. })
        ));
        assert!(matches!(
            check(&ok, 11, 9, None),
            Err(RangeError::Mismatch { .. })
        ));
        let whole = check(&answer(200, None, Some(100)), 0, 8, None).unwrap_err();
        assert!(whole.small_enough() && !whole.transient());
        assert!(whole.to_string().contains("ignores Range"), "{whole}");
        let big = check(&answer(200, None, Some(SMALL_FILE + 1)), 0, 8, None).unwrap_err();
        assert!(!big.small_enough());
        let missing = check(&answer(404, None, None), 0, 8, None).unwrap_err();
        assert_eq!(missing.to_string(), "HTTP 404 Not Found");
        assert!(!missing.transient());
        assert!(RangeError::Status { code: 503 }.transient());
        assert_eq!(
            check(&answer(206, None, Some(8)), 0, 8, None),
            Err(RangeError::NoContentRange)
        );
        assert!(matches!(
            check(&answer(206, Some("bytes 0-7/100"), Some(4)), 0, 8, None),
            Err(RangeError::ShortBody { got: 4, .. })
        ));
        assert!(check_body(0, 8, 8).is_ok());
        // A request running past u64::MAX is refused, not an overflow.
        let far = answer(206, Some("bytes 0-7/100"), None);
        assert!(matches!(
            check(&far, u64::MAX - 3, 10, None),
            Err(RangeError::Mismatch { .. })
        ));
        assert!(check_body(0, 9, 8).is_err());
    }

    #[test]
    fn failures_say_what_is_known_of_them() {
        let none = RangeError::no_answer("Failed to fetch");
        assert!(none.transient());
        let text = none.to_string();
        assert!(
            text.contains("network failure") && text.contains("CORS"),
            "{text}"
        );
        assert!(text.ends_with("(Failed to fetch)"), "{text}");
        assert!(!RangeError::no_answer("").to_string().ends_with(')'));
        let dropped = RangeError::Dropped {
            start: 100,
            want: 50,
            message: "network error".into(),
        };
        assert!(dropped.transient());
        assert_eq!(
            dropped.to_string(),
            "the connection broke while bytes 100-149 were arriving, after the server had \
             answered (a network failure, not a refusal) (network error)"
        );
    }

    #[test]
    fn remote_errors_name_the_url_and_the_tries() {
        let e = RemoteError {
            url: "http://h/a".into(),
            error: RangeError::Status { code: 503 },
            tries: 3,
        };
        assert_eq!(
            e.to_string(),
            "http://h/a: HTTP 503 Service Unavailable (after 3 tries)"
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_round_trips(s in ".{0,40}", a in 0u64..1 << 50, n in 1u64..1 << 20, extra in 1u64..1 << 20) {
            let _ = ContentRange::parse(&s);
            let value = format!("bytes {a}-{}/{}", a + n - 1, a + n - 1 + extra);
            let cr = ContentRange::parse(&value).unwrap();
            prop_assert_eq!((cr.start, cr.end, cr.total), (a, a + n - 1, a + n - 1 + extra));
        }
    }
}
