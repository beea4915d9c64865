//! What the app is mounted with ([`AppProps`]: the app reads its page URL, an embed sets them from
//! its attributes) and the views of its main panel ([`Tab`]), with their names in links.

use crate::ui::events::{ReportSlot, ViewEvent};
use yew::prelude::*;

/// What the app is mounted with: the app reads its URL, an embed sets them from attributes.
#[derive(Properties, PartialEq, Clone)]
pub struct AppProps {
    /// URLs to open at start (several = checkpoints to compare). None: the app reads `?url=`.
    #[prop_or_default]
    pub urls: Option<Vec<String>>,
    /// Sidecar URLs of the `urls` (the embed's `stats`), the `i`-th for the `i`-th URL; a URL
    /// without one has its sidecar looked for next to it (`<url>.bitlens.json`). The app reads
    /// `?stats=` when `urls` is None.
    #[prop_or_default]
    pub stats: Vec<String>,
    /// Tensor to select (Detail) once loaded; live: changing it selects that tensor.
    #[prop_or_default]
    pub tensor: Option<String>,
    /// View: "summary" | "table" | "detail" | "values" | "compare" (| "codecs"); live.
    #[prop_or_default]
    pub view: Option<String>,
    /// Compact layout without the app chrome (embed, or `?embed=1`).
    #[prop_or_default]
    pub embed: bool,
    /// Remote checkpoints larger than this many bytes wait for the visitor before whole-model
    /// statistics (the table and a selected tensor's stats never wait). Default 64 MB.
    #[prop_or(64_000_000)]
    pub auto_stats: u64,
    /// Write the view state into the page URL (`history.replaceState`); the app: true; embeds: false.
    #[prop_or(true)]
    pub sync_url: bool,
    /// Send credentials (cookies) with remote requests (embed attribute `credentials`).
    #[prop_or_default]
    pub credentials: bool,
    /// Events for the embed: Load / Select / Error (see `crate::ui::events::ViewEvent`).
    #[prop_or_default]
    pub events: Callback<ViewEvent>,
    /// Filled by the app after each change with what `inspect()` reports (see below).
    #[prop_or_default]
    pub report: Option<ReportSlot>,
}

impl Default for AppProps {
    /// The app's own props: everything from the page URL, the defaults above.
    fn default() -> Self {
        yew::props!(AppProps {})
    }
}

/// The views of the main panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    /// Whole-checkpoint summary.
    Summary,
    /// The tensor table.
    Tensors,
    /// One tensor's charts.
    Detail,
    /// One tensor's values as a weight map.
    Values,
    /// Checkpoint comparison.
    Compare,
    /// Compress checkpoints, decompress snapshots.
    Codecs,
}

impl Tab {
    /// The tab a link or a `view` attribute names (`tensors` and `table` are the same).
    pub fn from_name(name: &str) -> Option<Tab> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "summary" => Tab::Summary,
            "tensors" | "table" => Tab::Tensors,
            "detail" => Tab::Detail,
            "values" => Tab::Values,
            "compare" => Tab::Compare,
            "codecs" => Tab::Codecs,
            _ => return None,
        })
    }

    /// Its name in links (`?tab=`).
    pub fn name(self) -> &'static str {
        match self {
            Tab::Summary => "summary",
            Tab::Tensors => "tensors",
            Tab::Detail => "detail",
            Tab::Values => "values",
            Tab::Compare => "compare",
            Tab::Codecs => "codecs",
        }
    }
}
