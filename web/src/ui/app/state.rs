//! The app's state besides the codec panel's ([`State`]): the loaded checkpoints and where their
//! files are, comparisons, errors, and what is shown.

use super::Tab;
use crate::model::checkpoint::Checkpoint;
use crate::model::compare::Comparison;
use crate::model::table;
use crate::ui::loader::{LoadError, Source};
use bitlens_protocol::FileRef;
use std::collections::{HashMap, HashSet};
use web_sys::Blob;

/// The app's state besides the codec panel's: the loaded checkpoints, their comparisons, errors,
/// and what is shown.
#[derive(Default)]
pub struct State {
    /// Loaded checkpoints, in compare order.
    pub checkpoints: Vec<Checkpoint>,
    /// Where each checkpoint's files are (`Blob`s or URLs), by checkpoint id.
    pub sources: HashMap<u32, Vec<Source>>,
    /// The `Blob`s of the local checkpoints' files, by checkpoint id (what the codec panel reads).
    pub blobs: HashMap<u32, Vec<Blob>>,
    /// The URL each remote checkpoint was opened from, by checkpoint id.
    pub urls: HashMap<u32, String>,
    /// URLs asked for that gave no checkpoint (snapshots, failures): kept in the page link.
    pub other_urls: Vec<String>,
    /// Remote checkpoints whose whole-model statistics the visitor asked for.
    pub allowed: HashSet<u32>,
    /// URLs whose server ignores `Range`, small enough to be read whole if the visitor asks.
    pub offers: Vec<String>,
    /// The sidecar URLs given (the `stats` attribute or `stats=`), the `i`-th for the `i`-th URL
    /// opened at start.
    pub stats: Vec<String>,
    /// Notes that are no errors: statistics taken from a sidecar, or a sidecar ignored and why.
    pub notes: Vec<String>,
    /// The shard index file of each sharded checkpoint that came with one, by checkpoint id.
    pub indexes: HashMap<u32, (String, Blob)>,
    /// Consecutive checkpoints compared (`i` vs `i + 1`).
    pub comparisons: Vec<Comparison>,
    /// Files that could not be loaded or analysed.
    pub errors: Vec<LoadError>,
    /// The checkpoint shown in Summary / Tensors / Detail.
    pub active: Option<u32>,
    /// The open view.
    pub tab: Option<Tab>,
    /// Tensor table sort and filter.
    pub table: table::View,
    /// Tensor shown in Detail.
    pub detail: Option<String>,
    /// Comparison shown in Compare (index into `comparisons`).
    pub step: usize,
    /// A load is in progress.
    pub loading: bool,
    /// Files are being dragged over the page.
    pub drag: bool,
    /// Milliseconds from files given to tensor table on the page, for the last load.
    pub table_ms: Option<f64>,
    pub(super) next_id: u32,
}

impl State {
    /// The active checkpoint.
    pub fn active_checkpoint(&self) -> Option<&Checkpoint> {
        let id = self.active?;
        self.checkpoints.iter().find(|c| c.id == id)
    }

    /// A checkpoint by id.
    pub fn checkpoint(&self, id: u32) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.id == id)
    }

    /// The open tab (Summary by default).
    pub fn tab(&self) -> Tab {
        self.tab.unwrap_or(Tab::Summary)
    }

    /// True when a file of checkpoint `id` is remote.
    pub fn is_remote(&self, id: u32) -> bool {
        self.sources
            .get(&id)
            .is_some_and(|s| s.iter().any(|f| matches!(f, FileRef::Url(_))))
    }

    /// Where a file is: its URL when remote, else its path as given.
    pub fn location(&self, c: &Checkpoint, file: usize) -> String {
        match self.sources.get(&c.id).and_then(|s| s.get(file)) {
            Some(FileRef::Url(r)) => r.url.clone(),
            _ => c
                .files
                .get(file)
                .map_or_else(String::new, |f| f.path.clone()),
        }
    }
}
