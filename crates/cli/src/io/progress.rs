//! A byte-count progress bar on stderr, shown only for inputs over 100 MB.

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs at least this large get a progress bar.
const SHOW_ABOVE: u64 = 100_000_000;

/// Progress of a long job; cheap to update from many threads, silent for small inputs.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar for `total` bytes of work labelled `what`, or a silent one for small inputs.
    pub fn new(total: u64, what: &str) -> Self {
        if total < SHOW_ABOVE {
            return Progress(None);
        }
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        Progress(Some(bar))
    }

    /// Records `bytes` more bytes done.
    pub fn inc(&self, bytes: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(bytes);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
