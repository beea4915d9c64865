//! What the root component tells the outside: the view state written into the page link, its
//! events and `inspect()` report for an embedding page, and the refusal of codec jobs on remote
//! checkpoints.

use super::codecs::CodecMsg;
use super::{App, AppProps};
use crate::model::link::ViewState;
use crate::ui::events::ViewEvent;
use crate::ui::loader::LoadError;

impl App {
    /// The view state a link reproduces: the URLs of the remote checkpoints (in compare order, then
    /// those that gave none), the tab, the tensor.
    pub(super) fn view_state(&self) -> ViewState {
        let s = &self.state;
        let mut urls: Vec<String> = s
            .checkpoints
            .iter()
            .filter_map(|c| s.urls.get(&c.id).cloned())
            .collect();
        urls.extend(s.other_urls.iter().cloned());
        ViewState {
            urls,
            stats: s.stats.clone(),
            tab: s.tab.map(|t| t.name().to_owned()),
            tensor: s.detail.clone(),
            embed: self.embed,
        }
    }

    /// The codecs work on local files only: refuses a codec job on a remote checkpoint, saying so.
    pub(super) fn refuse_remote_codecs(&mut self, msg: &CodecMsg) -> bool {
        let ckpt = match msg {
            CodecMsg::Compress | CodecMsg::CompareCodecs(_) => self.state.active,
            CodecMsg::SetBase(b) | CodecMsg::SnapshotBase(_, b) => *b,
            _ => None,
        };
        let Some(c) = ckpt.filter(|&id| self.state.is_remote(id)) else {
            return false;
        };
        let name = self
            .state
            .checkpoint(c)
            .map_or_else(String::new, |c| c.name.clone());
        self.state.errors.push(LoadError {
            file: self.state.urls.get(&c).cloned().unwrap_or(name),
            reason: "this checkpoint is remote: the codecs work on local files, so download the \
                     file first and open it here"
                .into(),
        });
        true
    }

    /// Tells the host about new errors, the loaded tables, and fills the report slot.
    pub(super) fn tell_host(&mut self, props: &AppProps) {
        for e in &self.state.errors[self.errors_told.min(self.state.errors.len())..] {
            let url = bitlens_remote::is_url(&e.file)
                .unwrap_or(false)
                .then(|| e.file.clone());
            props.events.emit(ViewEvent::Error {
                url,
                message: format!("{}: {}", e.file, e.reason),
            });
        }
        self.errors_told = self.state.errors.len();
        if let Some(slot) = &props.report {
            let s = &self.state;
            let key = (
                s.checkpoints.iter().map(|c| c.id).collect::<Vec<_>>(),
                s.checkpoints.iter().map(|c| c.done).sum::<usize>(),
            );
            if self.reported.as_ref() != Some(&key) {
                let report = crate::model::report::report(&s.checkpoints, |c, f| s.location(c, f));
                *slot.0.borrow_mut() = Some(report);
                self.reported = Some(key);
            }
        }
    }
}
