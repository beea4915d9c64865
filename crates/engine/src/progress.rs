//! What a long command tells its caller while it runs: how many bytes it will go through, each
//! step of them, and warnings that do not stop it. The CLI draws a progress bar and prints the
//! warnings; the Python package passes them on; [`Silent`] drops them.

/// Receives a command's progress. Called from the worker threads of the rayon pool, so it must be
/// `Sync`; every method has a do-nothing default.
pub trait Progress: Sync {
    /// A phase begins that will go through `total` bytes (`what`: `inspect`, `compress`…).
    fn start(&self, total: u64, what: &str) {
        let _ = (total, what);
    }

    /// `bytes` more were processed.
    fn inc(&self, bytes: u64) {
        let _ = bytes;
    }

    /// The phase is over.
    fn finish(&self) {}

    /// What the command is doing now, in a line (`step-2/model.safetensors: delta against …`).
    fn note(&self, message: &str) {
        let _ = message;
    }

    /// Something the user should know that does not stop the command (a tensor missing from an
    /// index, files left out of a chain).
    fn warn(&self, message: &str) {
        let _ = message;
    }
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {}
