//! Why a command could not be carried out: one [`Error`] whose variant is the class of the cause
//! (the Python package raises one exception type per class) and whose text is the CLI's line —
//! what was being read and the rule it broke (`model.safetensors: header length 9999 exceeds the
//! file size 100`). Errors of the core crates are classed once, in the `From` impls here.
//!
//! [`Context`] adds what was being done to an error (`.with_context(|| path)`), as the CLI's
//! messages have always said it; [`bail!`](crate::bail) returns an [`Error::Invalid`].

use bitlens_inshrink::sketch::SketchError;
use bitlens_inshrink::values::ValuesError;
use bitlens_remote::{RangeError, RemoteError, UrlError};
use bitlens_report::sidecar::SidecarError;
use bitlens_snapshot::chain::ChainError;
use bitlens_snapshot::inshrink::{AnnexError, InshrinkError};
use bitlens_snapshot::{ChoiceError, SnapshotError};
use bitlens_stats::entry::EntryError;
use bitlens_stats::StatsError;
use bitlens_tensors::format::bytes::BytesError;
use bitlens_tensors::format::FormatError;
use bitlens_tensors::{CheckpointError, HeaderError, IndexError, SourceError};
use std::fmt;

/// The underlying error of an [`Error`].
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A command's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a command failed, by class of cause. Each variant's text is the whole message: the
/// context (what was being read or written, outermost first) and the cause's own words.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request cannot be carried out as given: options that do not go together, an input of a
    /// kind the command does not take, a tensor or step that is not there, the wrong base.
    #[error("{}", joined(context, None))]
    Invalid {
        /// The whole message.
        context: String,
    },
    /// A file's bytes break a rule of its format (a safetensors header or shard index, GGUF,
    /// PyTorch, NumPy, zip, a snapshot's magic or version), or its files do not make one
    /// checkpoint.
    #[error("{}", joined(context, Some(source)))]
    Format {
        /// What was being read.
        context: String,
        /// The rule broken.
        #[source]
        source: Cause,
    },
    /// A snapshot or chain is damaged: a checksum, frame, index or annex that does not decode or
    /// match.
    #[error("{}", joined(context, Some(source)))]
    Corrupt {
        /// What was being read.
        context: String,
        /// What does not match.
        #[source]
        source: Cause,
    },
    /// A remote file could not be read as asked (an HTTP status, a server that ignores `Range`,
    /// the network), after the retries.
    #[error("{}", joined(context, Some(source)))]
    Remote {
        /// What was being read.
        context: String,
        /// The failure.
        #[source]
        source: Cause,
    },
    /// A local file or directory could not be opened, read or written.
    #[error("{}", joined(context, Some(source)))]
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// `context: cause`, or either alone.
fn joined(context: &str, cause: Option<&dyn fmt::Display>) -> String {
    match (context.is_empty(), cause) {
        (_, None) => context.to_owned(),
        (true, Some(c)) => c.to_string(),
        (false, Some(c)) => format!("{context}: {c}"),
    }
}

/// The class of an [`Error`], without its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// [`Error::Invalid`].
    Invalid,
    /// [`Error::Format`].
    Format,
    /// [`Error::Corrupt`].
    Corrupt,
    /// [`Error::Remote`].
    Remote,
    /// [`Error::Io`].
    Io,
}

impl ErrorKind {
    /// Its name in records and tables: `usage`, `format`, `corrupt`, `remote` or `io` (the
    /// Python package's `UsageError`, `FormatError`, `CorruptError`, `RemoteError`, `OSError`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "usage",
            ErrorKind::Format => "format",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Remote => "remote",
            ErrorKind::Io => "io",
        }
    }
}

impl Error {
    /// An [`Error::Invalid`] saying `message`.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid {
            context: message.into(),
        }
    }

    /// Its class.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Invalid { .. } => ErrorKind::Invalid,
            Error::Format { .. } => ErrorKind::Format,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Remote { .. } => ErrorKind::Remote,
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// The operating system's error of an [`Error::Io`] (to tell a missing file from others).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Its whole message on one line, as the CLI prints it ([`one_line`]).
    pub fn message(&self) -> String {
        one_line(self)
    }

    /// The same error with `outer` said first (`outer: …`).
    pub fn context(mut self, outer: impl fmt::Display) -> Error {
        let (Error::Invalid { context }
        | Error::Format { context, .. }
        | Error::Corrupt { context, .. }
        | Error::Remote { context, .. }
        | Error::Io { context, .. }) = &mut self;
        *context = joined(
            &outer.to_string(),
            (!context.is_empty()).then_some(&*context as _),
        );
        self
    }

    fn format(source: impl Into<Cause>) -> Error {
        Error::Format {
            context: String::new(),
            source: source.into(),
        }
    }

    fn corrupt(source: impl Into<Cause>) -> Error {
        Error::Corrupt {
            context: String::new(),
            source: source.into(),
        }
    }

    fn remote(source: impl Into<Cause>) -> Error {
        Error::Remote {
            context: String::new(),
            source: source.into(),
        }
    }

    fn invalid_from(source: impl fmt::Display) -> Error {
        Error::invalid(source.to_string())
    }
}

/// An error and its causes on one line, `: `-separated, leaving out a cause whose text is already
/// said (a read error carries its backend's message and has it as its source too): the CLI's
/// message (after `bitlens: `), and the text of the Python package's exceptions.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// A remote read that failed after its retries, as the CLI says it (with the `--download-small`
/// hint where it applies); carried inside [`SourceError::Backend`] so that it is classed as
/// [`Error::Remote`] wherever it surfaces.
#[derive(Debug)]
pub struct RemoteReadError {
    /// The failure.
    pub error: RemoteError,
    /// A hint appended to its text.
    pub hint: &'static str,
}

impl fmt::Display for RemoteReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.error, self.hint)
    }
}

impl std::error::Error for RemoteReadError {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        if e.get_ref().is_some_and(|r| r.is::<RemoteReadError>()) {
            return Error::remote(e);
        }
        Error::Io {
            context: String::new(),
            source: e,
        }
    }
}

impl From<SourceError> for Error {
    fn from(e: SourceError) -> Error {
        match e {
            SourceError::Backend { ref source, .. }
                if source.get_ref().is_some_and(|r| r.is::<RemoteReadError>()) =>
            {
                Error::remote(e)
            }
            SourceError::Backend { .. } => Error::Io {
                context: String::new(),
                source: std::io::Error::other(e),
            },
            SourceError::Header(h) => Error::format(h),
            _ => Error::format(e),
        }
    }
}

impl From<BytesError> for Error {
    fn from(e: BytesError) -> Error {
        match e {
            BytesError::Source(s) => s.into(),
            _ => Error::format(e),
        }
    }
}

impl From<EntryError> for Error {
    fn from(e: EntryError) -> Error {
        match e {
            EntryError::Bytes(b) => b.into(),
            _ => Error::format(e),
        }
    }
}

impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Error {
        match e {
            SnapshotError::Source(s) => s.into(),
            SnapshotError::Io(io) => io.into(),
            SnapshotError::BadMagic { .. }
            | SnapshotError::UnsupportedVersion { .. }
            | SnapshotError::StoredHeader(_) => Error::format(e),
            SnapshotError::BaseRequired { .. }
            | SnapshotError::WrongBase { .. }
            | SnapshotError::NoTensor { .. }
            | SnapshotError::NotPlainTensor { .. }
            | SnapshotError::Misuse(_) => Error::invalid_from(e),
            _ => Error::corrupt(e),
        }
    }
}

impl From<InshrinkError> for Error {
    fn from(e: InshrinkError) -> Error {
        match e {
            InshrinkError::Snapshot(s) => s.into(),
            InshrinkError::NotInshrink | InshrinkError::WrongBase(_) => Error::invalid_from(e),
            InshrinkError::Encode { .. } => Error::invalid_from(e),
            _ => Error::corrupt(e),
        }
    }
}

impl From<RemoteError> for Error {
    fn from(e: RemoteError) -> Error {
        Error::remote(e)
    }
}

impl From<RangeError> for Error {
    fn from(e: RangeError) -> Error {
        Error::remote(e)
    }
}

/// Errors of rules a file's bytes break.
macro_rules! format_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::format(e)
            }
        }
    )*};
}
format_errors!(
    HeaderError,
    IndexError,
    CheckpointError,
    FormatError,
    StatsError,
    ValuesError,
    SidecarError
);

/// Errors of damaged snapshots and chains.
macro_rules! corrupt_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::corrupt(e)
            }
        }
    )*};
}
corrupt_errors!(AnnexError, ChainError);

/// Errors of requests that cannot be carried out as given.
macro_rules! invalid_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::invalid_from(e)
            }
        }
    )*};
}
invalid_errors!(ChoiceError, UrlError, SketchError);

/// Adds what was being done to an error, outermost first (the CLI's `path: rule` messages).
pub trait Context<T> {
    /// `outer: error`.
    fn context(self, outer: impl fmt::Display) -> Result<T>;
    /// `outer(): error`, the text made only on failure.
    fn with_context<D: fmt::Display>(self, outer: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, outer: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(outer))
    }

    fn with_context<D: fmt::Display>(self, outer: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| e.into().context(outer()))
    }
}

/// A missing value is an [`Error::Invalid`] saying what was missing.
impl<T> Context<T> for Option<T> {
    fn context(self, outer: impl fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::invalid(outer.to_string()))
    }

    fn with_context<D: fmt::Display>(self, outer: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| Error::invalid(outer().to_string()))
    }
}

/// Returns an [`Error::Invalid`] with a formatted message.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::invalid(format!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_said_first_and_the_class_is_kept() {
        let e: Error = HeaderError::FileTooSmall { file_size: 3 }.into();
        assert_eq!(e.kind(), ErrorKind::Format);
        let e = e.context("m.safetensors");
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(e.to_string().starts_with("m.safetensors: "), "{e}");
        let e = Error::invalid("no base").context("step `a`");
        assert_eq!(e.to_string(), "step `a`: no base");
        let missing: Result<()> = Err(std::io::Error::from(std::io::ErrorKind::NotFound))
            .with_context(|| "x: cannot open");
        let e = missing.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(
            e.io_error().map(|e| e.kind()),
            Some(std::io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn a_remote_read_inside_a_source_error_is_remote() {
        let remote = RemoteError {
            url: "http://h/m".into(),
            error: RangeError::Status { code: 404 },
            tries: 1,
        };
        let source = SourceError::Backend {
            offset: 0,
            len: 8,
            source: std::io::Error::other(RemoteReadError {
                error: remote,
                hint: "",
            }),
        };
        let e: Error = SnapshotError::Source(source).into();
        assert_eq!(e.kind(), ErrorKind::Remote);
        assert!(e.to_string().contains("http://h/m: HTTP 404"), "{e}");
    }
}
