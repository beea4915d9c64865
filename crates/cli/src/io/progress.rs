//! The terminal's view of a command's progress (`bitlens_engine::Progress`): a byte-count bar on
//! stderr for inputs over 100 MB, and the engine's notes and warnings as `bitlens:` lines.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::RwLock;

/// Inputs at least this large get a progress bar.
const SHOW_ABOVE: u64 = 100_000_000;

/// Progress of a command on stderr; cheap to update from many threads, silent for small inputs.
#[derive(Default)]
pub struct Terminal {
    bar: RwLock<Option<ProgressBar>>,
}

impl Terminal {
    /// A bar for `total` bytes of work labelled `what`, or none for small inputs.
    fn bar(total: u64, what: &str) -> Option<ProgressBar> {
        if total < SHOW_ABOVE {
            return None;
        }
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_owned());
        Some(bar)
    }
}

impl bitlens_engine::Progress for Terminal {
    fn start(&self, total: u64, what: &str) {
        let mut bar = self.bar.write().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = bar.take() {
            old.finish_and_clear();
        }
        *bar = Self::bar(total, what);
    }

    fn inc(&self, bytes: u64) {
        if let Some(bar) = &*self.bar.read().unwrap_or_else(|e| e.into_inner()) {
            bar.inc(bytes);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.write().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }

    fn note(&self, message: &str) {
        eprintln!("bitlens: {message}");
    }

    fn warn(&self, message: &str) {
        eprintln!("bitlens: warning: {message}");
    }
}
