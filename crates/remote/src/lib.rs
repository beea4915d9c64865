//! The rules of reading a remote file with HTTP `Range` requests, with no I/O of its own: the CLI
//! (ureq, blocking) and the page (`fetch` / synchronous XHR in workers) send the requests and both
//! judge the answers here, so a server that ignores `Range`, a `Content-Range` that disagrees with
//! the request, a 404 or a network failure reads the same everywhere.
//!
//! - [`url`]: which URLs are accepted (`http`/`https`, no credentials) and where a shard lives
//!   next to its index.
//! - [`range`]: parsing `Content-Range`, checking an answer against its request ([`check`]), and
//!   the typed [`RangeError`] / [`RemoteError`].
//! - [`plan`]: how reads are cut and retried ([`MAX_REQUEST`], [`TRIES`], [`backoff_ms`]).
#![forbid(unsafe_code)]

pub mod plan;
pub mod range;
pub mod url;

pub use plan::{backoff_ms, requests, IN_FLIGHT, MAX_REQUEST, SMALL_FILE, TRIES};
pub use range::{
    check, check_body, Answer, ContentRange, ContentRangeError, Head, RangeError, RemoteError,
    NO_ANSWER,
};
pub use url::{check_url, is_url, join, UrlError};
