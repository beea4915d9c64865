//! TEMP stub (the *page* helper owns this file): the app's events for the embed and the slot the
//! app fills with its `inspect` report.

use bitlens_protocol::inspect::InspectReport;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// What the app tells an embedding element.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ViewEvent {
    /// Checkpoints loaded.
    Load {
        /// Their URLs.
        urls: Vec<String>,
        /// Files loaded.
        files: usize,
        /// Tensors loaded.
        tensors: usize,
    },
    /// A tensor was selected.
    Select {
        /// Its name.
        tensor: String,
    },
    /// Something failed.
    Error {
        /// The URL it is about.
        url: Option<String>,
        /// What happened.
        message: String,
    },
}

/// Where the app puts its `inspect` report (compared by pointer).
#[derive(Debug, Clone, Default)]
pub struct ReportSlot(pub Rc<RefCell<Option<InspectReport>>>);

impl PartialEq for ReportSlot {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}
