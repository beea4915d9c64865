//! What the app tells its host ([`ViewEvent`]): the embed turns each into a DOM `CustomEvent`
//! (`bitlens-load`, `bitlens-select`, `bitlens-error`) whose `detail` is the event serialized; and
//! the slot the app keeps filled with its `inspect()` report ([`ReportSlot`]).

use crate::model::report::ViewReport;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// Something the host page may want to know.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ViewEvent {
    /// Tensor tables are shown for what was loaded.
    Load {
        /// The URLs of the loaded remote checkpoints.
        urls: Vec<String>,
        /// Files loaded, over all checkpoints.
        files: usize,
        /// Tensors loaded, over all checkpoints.
        tensors: usize,
    },
    /// A tensor was selected.
    Select {
        /// Its name.
        tensor: String,
    },
    /// A file or URL could not be loaded or analysed.
    Error {
        /// The URL, when the error is about one.
        url: Option<String>,
        /// The message shown.
        message: String,
    },
}

/// Where the app leaves its latest report; compared by pointer, so a prop holding it never makes
/// the app re-render.
#[derive(Debug, Clone, Default)]
pub struct ReportSlot(pub Rc<RefCell<Option<ViewReport>>>);

impl PartialEq for ReportSlot {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}
