//! Which URLs bitlens reads: `http` and `https` only, never with credentials in the URL; and the
//! URL of a shard named by a shard index (resolved next to the index, plain relative names only).

/// Why a URL or a shard name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// A `scheme://` other than http and https.
    #[error("{url}: only http and https URLs are supported")]
    Scheme {
        /// The URL.
        url: String,
    },
    /// `user:password@host`.
    #[error("{url}: credentials in URLs are not supported")]
    Credentials {
        /// The URL.
        url: String,
    },
    /// A shard name that would leave the index's directory or is not a path.
    #[error("{index}: shard name `{name}` must be a plain relative path")]
    ShardName {
        /// The index URL.
        index: String,
        /// The shard name.
        name: String,
    },
}

/// True when `input` is an `http://` or `https://` URL (any case); an error for another
/// `scheme://` form; false for anything else (a path).
pub fn is_url(input: &str) -> Result<bool, UrlError> {
    let lower = input.get(..8).unwrap_or(input).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(true);
    }
    if let Some((scheme, _)) = input.split_once("://") {
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(UrlError::Scheme { url: input.into() });
        }
    }
    Ok(false)
}

/// Accepts an `http`/`https` URL without `user:password@`.
pub fn check_url(url: &str) -> Result<(), UrlError> {
    if !is_url(url)? {
        return Err(UrlError::Scheme { url: url.into() });
    }
    let authority = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?', '#']).next())
        .unwrap_or("");
    if authority.contains('@') {
        return Err(UrlError::Credentials { url: url.into() });
    }
    Ok(())
}

/// The URL of shard `name` next to the index at `index` (its query and fragment dropped). Names
/// with `..`, a leading `/`, a `://` or a `?`/`#` are refused.
pub fn join(index: &str, name: &str) -> Result<String, UrlError> {
    if name.is_empty()
        || name.starts_with('/')
        || name.contains("://")
        || name.split(['/', '\\']).any(|part| part == "..")
        || name.contains(['?', '#'])
    {
        return Err(UrlError::ShardName {
            index: index.into(),
            name: name.into(),
        });
    }
    let path_end = index.find(['?', '#']).unwrap_or(index.len());
    let dir_end = index[..path_end].rfind('/').map_or(path_end, |i| i + 1);
    Ok(format!("{}{name}", &index[..dir_end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_urls_are_resolved_next_to_the_index() {
        let base = "http://h/m/model.safetensors.index.json?x=1";
        assert_eq!(
            join(base, "a.safetensors").unwrap(),
            "http://h/m/a.safetensors"
        );
        assert_eq!(
            join(base, "d/a.safetensors").unwrap(),
            "http://h/m/d/a.safetensors"
        );
        for bad in ["../a", "/a", "http://e/a", "d/../../a", "a?b", ""] {
            assert!(join(base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_http_schemes_are_urls() {
        assert!(is_url("https://h/a").unwrap());
        assert!(is_url("HTTP://h/a").unwrap());
        assert!(!is_url("dir/a.safetensors").unwrap());
        assert!(is_url("ftp://h/a").is_err());
        assert!(check_url("file:///etc/passwd").is_err());
        assert!(check_url("a.safetensors").is_err());
        assert!(check_url("https://h/a").is_ok());
    }

    #[test]
    fn credentials_are_refused() {
        assert_eq!(
            check_url("https://u:p@h/a"),
            Err(UrlError::Credentials {
                url: "https://u:p@h/a".into()
            })
        );
        assert!(check_url("https://h/a@b").is_ok());
    }
}
