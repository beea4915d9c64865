//! Snapshots as checkpoints: when the codec panel has read a `.bls` snapshot's index, the root
//! adds a checkpoint made from it ([`crate::model::snapshot`]); when the panel has decoded one of
//! its tensors, that row gets the statistics of the decoded bytes. The tensor a snapshot
//! checkpoint shows (a click, `?tensor=`, the embed's `tensor`) is decoded by the codec panel —
//! fetching only its frames for a remote one — where a checkpoint's would be planned for the
//! statistics workers.

use super::codecs::News;
use super::{App, AppProps, Tab};
use crate::model::checkpoint::relabel;
use crate::ui::jobs::now;
use crate::ui::loader::LoadError;

impl App {
    /// Takes in what the codec panel's jobs have to tell (indexes read, tensors decoded).
    pub(super) fn on_codec_news(&mut self, props: &AppProps) {
        for news in self.codecs.take_news() {
            match news {
                News::Index(snap) => self.add_snapshot(snap, props),
                News::Decoded {
                    snap,
                    tensor,
                    stats,
                } => {
                    let Some(c) = self
                        .state
                        .checkpoints
                        .iter_mut()
                        .find(|c| c.snapshot.as_ref().is_some_and(|s| s.snap == snap))
                    else {
                        continue;
                    };
                    if let Some(row) = c.row_by_name(&tensor) {
                        c.set_stats(row, *stats);
                    }
                }
            }
        }
    }

    /// Adds the checkpoint of snapshot `snap`, whose index was just read.
    fn add_snapshot(&mut self, snap: u32, props: &AppProps) {
        let Some(s) = self.codecs.state.snapshots.iter().find(|s| s.id == snap) else {
            return;
        };
        let Some(info) = &s.info else {
            return;
        };
        let location = s.remote().map_or_else(|| s.name.clone(), |r| r.url.clone());
        let id = self.state.next_id;
        match crate::model::snapshot::checkpoint(id, snap, &location, info) {
            None => return,
            Some(Err(e)) => {
                return self.state.errors.push(LoadError {
                    file: location,
                    reason: e.to_string(),
                })
            }
            Some(Ok(c)) => {
                self.state.next_id += 1;
                self.state.checkpoints.push(c);
                // A remote snapshot is a remote checkpoint of the view now (its link, the events).
                if bitlens_remote::is_url(&location).unwrap_or(false) {
                    self.state.other_urls.retain(|u| *u != location);
                    self.state.urls.insert(id, location);
                }
            }
        }
        relabel(&mut self.state.checkpoints);
        if self.state.active.is_none() {
            self.state.active = Some(id);
        }
        let tab_given = self.state.tab.is_some();
        if !tab_given {
            self.state.tab = Some(Tab::Tensors);
        }
        self.pending_table = Some(now());
        self.select_wanted(props, tab_given);
        self.schedule_shown();
    }

    /// Decodes the tensor the active snapshot checkpoint shows, when it has no statistics yet
    /// (the codec panel starts it once its worker is free).
    pub(super) fn decode_shown(&mut self) {
        let Some(c) = self.state.active_checkpoint() else {
            return;
        };
        let Some(s) = &c.snapshot else {
            return;
        };
        let Some(row) = c.detail_row(self.state.detail.as_deref()) else {
            return;
        };
        if c.rows[row].stats.is_some() {
            return;
        }
        let (snap, name) = (s.snap, c.rows[row].name.clone());
        let (panel, mut ctx) = self.codecs();
        panel.want_preview(snap, &name, &mut ctx);
    }

    /// Forgets the snapshot of checkpoint `id`, if it is one.
    pub(super) fn forget_snapshot(&mut self, id: u32) {
        let snap = self
            .state
            .checkpoint(id)
            .and_then(|c| c.snapshot.as_ref())
            .map(|s| s.snap);
        if let Some(snap) = snap {
            let (panel, mut ctx) = self.codecs();
            panel.remove_snapshot(snap, &mut ctx);
        }
    }
}
