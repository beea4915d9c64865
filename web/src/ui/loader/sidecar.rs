//! Fetching a remote file's sidecar (`<url>.bitlens.json`, precomputed statistics): at the URL the
//! `stats` attribute or `stats=` parameter names, else next to the file
//! ([`bitlens_tensors::naming::sidecar_name`]), with one `GET` of at most
//! [`bitlens_report::sidecar::MAX_BYTES`]. It runs while the file's header is read; what it
//! fetched is judged against the file by [`crate::model::sidecar::judge`].

use crate::model::sidecar::Fetched;
use crate::ui::io::remote;
use bitlens_report::sidecar::MAX_BYTES;
use bitlens_tensors::naming;

/// Fetches the sidecar of the file at `url`: `given`, else `<url>.bitlens.json`.
pub async fn fetch(url: &str, given: Option<&str>, credentials: bool) -> Fetched {
    let location = given.map_or_else(|| naming::sidecar_name(url), str::to_owned);
    let bytes = remote::get_document(&location, credentials, MAX_BYTES).await;
    Fetched {
        location,
        given: given.is_some(),
        bytes,
    }
}
