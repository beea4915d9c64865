//! Loading: URLs opened (the URL box, `?url=`, an embed's `src`), the loader's outcome folded into
//! the state (checkpoints, remote files, snapshots handed to the codec panel, the tab and tensor
//! asked for), the tensor selected, and everything forgotten.

use super::{App, AppProps, Msg, Tab};
use crate::ui::events::ViewEvent;
use crate::ui::jobs::{mark, now, Jobs};
use crate::ui::loader::{self, Outcome};
use bitlens_protocol::FileRef;
use web_sys::Blob;
use yew::prelude::*;

impl App {
    pub(super) fn on_loaded(&mut self, outcome: Outcome, given: f64, props: &AppProps) {
        // A tab asked for (`?tab=`, the `view` prop, or the visitor's) is kept.
        let tab_given = self.state.tab.is_some();
        self.state.loading = false;
        self.state.errors.extend(outcome.errors);
        self.state.offers.extend(outcome.offers);
        self.state.notes.extend(outcome.notes);
        let (panel, mut ctx) = self.codecs();
        let mut snapshots = panel.open(outcome.snapshots, outcome.snapshot_indexes, &mut ctx);
        for (name, file) in outcome.remote_snapshots {
            let (panel, mut ctx) = self.codecs();
            panel.open_remote(name, file, &mut ctx);
            snapshots = true;
        }
        // In the app, a snapshot opens in the Codecs view (where it is restored), unless a tensor
        // is asked for; in an embed, in the Tensors view once its index is read (a checkpoint).
        if snapshots && self.state.tab.is_none() && self.want_tensor.is_none() && !self.embed {
            self.state.tab = Some(Tab::Codecs);
        }
        let first_new = outcome.loaded.first().map(|l| l.checkpoint.id);
        for l in outcome.loaded {
            let id = l.checkpoint.id;
            self.state.next_id = self.state.next_id.max(id + 1);
            let blobs: Vec<Blob> = l
                .sources
                .iter()
                .filter_map(|s| match s {
                    FileRef::Blob(b) => Some(b.clone()),
                    FileRef::Url(_) => None,
                })
                .collect();
            if blobs.len() == l.sources.len() {
                self.state.blobs.insert(id, blobs);
            }
            self.state.sources.insert(id, l.sources);
            if let Some(url) = l.url {
                self.state.other_urls.retain(|u| *u != url);
                self.state.urls.insert(id, url);
            }
            if let Some(index) = l.index {
                self.state.indexes.insert(id, index);
            }
            self.state.checkpoints.push(l.checkpoint);
        }
        crate::model::checkpoint::relabel(&mut self.state.checkpoints);
        if let Some(id) = first_new {
            if self.state.active.is_none() {
                self.state.active = Some(id);
            }
            if self.state.tab.is_none() {
                self.state.tab = Some(Tab::Tensors);
            }
            self.pending_table = Some(given);
        }
        self.select_wanted(props, tab_given);
        self.rebuild_comparisons();
        self.schedule(props.auto_stats);
    }

    /// Selects the tensor asked for (`?tensor=`, the `tensor` prop) once the active checkpoint has
    /// it, opening Detail unless a tab was asked for (`tab_given`).
    pub(super) fn select_wanted(&mut self, props: &AppProps, tab_given: bool) {
        let Some(name) = self.want_tensor.clone() else {
            return;
        };
        let known = self
            .state
            .active_checkpoint()
            .and_then(|c| c.row_by_name(&name))
            .is_some();
        if known {
            self.want_tensor = None;
            self.select(name, props);
            if !tab_given {
                self.state.tab = Some(Tab::Detail);
            }
        }
    }

    /// Selects tensor `name` for Detail: its statistics come next; the host hears of it.
    pub(super) fn select(&mut self, name: String, props: &AppProps) {
        if self.state.detail.as_deref() != Some(name.as_str()) {
            props.events.emit(ViewEvent::Select {
                tensor: name.clone(),
            });
        }
        self.state.detail = Some(name);
    }

    /// Starts loading `urls` as checkpoints (appended in that order); `stats[i]` names the sidecar
    /// of `urls[i]` (else it is looked for next to the file).
    pub(super) fn open_urls(&mut self, ctx: &Context<Self>, urls: Vec<String>, stats: Vec<String>) {
        let urls: Vec<String> = urls
            .into_iter()
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return;
        }
        mark("bitlens:files-given");
        let given = now();
        self.state.loading = true;
        for u in &urls {
            if !self.state.other_urls.contains(u) {
                self.state.other_urls.push(u.clone());
            }
        }
        let first_id = self.state.next_id;
        self.state.next_id += urls.len() as u32;
        let credentials = ctx.props().credentials;
        ctx.link().send_future(async move {
            Msg::Loaded(
                loader::load_urls(urls, &stats, first_id, credentials).await,
                given,
            )
        });
    }

    /// Forgets every checkpoint, snapshot and task.
    pub(super) fn clear(&mut self) {
        self.pool.cancel();
        self.jobs = Jobs::default();
        self.state.checkpoints.clear();
        self.state.sources.clear();
        self.state.blobs.clear();
        self.state.urls.clear();
        self.state.other_urls.clear();
        self.state.notes.clear();
        self.state.allowed.clear();
        self.state.comparisons.clear();
        self.state.active = None;
        self.state.detail = None;
        self.state.tab = None;
        self.codecs.clear();
        self.state.indexes.clear();
    }
}
