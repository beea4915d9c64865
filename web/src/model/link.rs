//! The view state a link carries — `?url=A&url=B&stats=…&tab=…&tensor=…&embed=1` — read from and written
//! to query pairs ([`ViewState`]), and how a checkpoint URL reads as a path
//! ([`url_path`], [`file_name`]) so remote checkpoints are grouped and labelled by the same rules
//! as files.

/// What a link to the app reproduces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewState {
    /// Checkpoint URLs, in compare order.
    pub urls: Vec<String>,
    /// Sidecar URLs (`stats=`): the `i`-th names the sidecar of the `i`-th checkpoint URL (else it
    /// is looked for next to the file, `<url>.bitlens.json`).
    pub stats: Vec<String>,
    /// The open view (`summary`, `tensors`, `detail`, `compare`, `codecs`).
    pub tab: Option<String>,
    /// The selected tensor.
    pub tensor: Option<String>,
    /// The compact layout without the app chrome.
    pub embed: bool,
}

impl ViewState {
    /// Reads decoded query pairs; unknown keys are ignored, empty values dropped.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut s = ViewState::default();
        for (k, v) in pairs {
            let v = v.trim().to_owned();
            match k.as_str() {
                "url" if !v.is_empty() => s.urls.push(v),
                "stats" if !v.is_empty() => s.stats.push(v),
                "tab" if !v.is_empty() => s.tab = Some(v),
                "tensor" if !v.is_empty() => s.tensor = Some(v),
                "embed" => s.embed = matches!(v.as_str(), "1" | "true" | ""),
                _ => {}
            }
        }
        s
    }

    /// The query pairs, in a stable order (not yet encoded).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> =
            self.urls.iter().map(|u| ("url", u.clone())).collect();
        out.extend(self.stats.iter().map(|u| ("stats", u.clone())));
        if let Some(t) = &self.tab {
            out.push(("tab", t.clone()));
        }
        if let Some(t) = &self.tensor {
            out.push(("tensor", t.clone()));
        }
        if self.embed {
            out.push(("embed", "1".into()));
        }
        out
    }
}

/// A URL as a path: host and path, without scheme, query or fragment (`h:8080/m/a.safetensors`).
pub fn url_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    rest[..end].trim_end_matches('/').to_owned()
}

/// The last path component of a URL (`a.safetensors`), or its host when the path is empty.
pub fn file_name(url: &str) -> String {
    let path = url_path(url);
    path.rsplit('/').next().unwrap_or(&path).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &[(&str, &str)]) -> Vec<(String, String)> {
        q.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn view_state_round_trips_and_keeps_url_order() {
        let s = ViewState::from_pairs(pairs(&[
            ("url", "http://h/a.safetensors"),
            ("tab", "detail"),
            ("x", "y"),
            ("url", "http://h/b.safetensors"),
            ("stats", "http://s/a.json"),
            ("tensor", "w.0"),
            ("embed", "1"),
        ]));
        assert_eq!(s.urls, ["http://h/a.safetensors", "http://h/b.safetensors"]);
        assert_eq!(s.stats, ["http://s/a.json"]);
        assert_eq!(s.tab.as_deref(), Some("detail"));
        assert!(s.embed);
        let back = ViewState::from_pairs(s.to_pairs().into_iter().map(|(k, v)| (k.to_owned(), v)));
        assert_eq!(back, s);
        assert!(!ViewState::from_pairs(pairs(&[("embed", "0"), ("url", " ")])).embed);
        assert!(ViewState::from_pairs(pairs(&[("url", " ")]))
            .urls
            .is_empty());
    }

    #[test]
    fn urls_read_as_paths() {
        assert_eq!(
            url_path("https://h:8080/m/a.safetensors?download=1#x"),
            "h:8080/m/a.safetensors"
        );
        assert_eq!(file_name("http://h/m/model.bls"), "model.bls");
        assert_eq!(file_name("http://h/"), "h");
    }
}
