//! Writing a command's output file: through a temporary sibling renamed into place on success
//! (a failed run leaves no partial output), devices and pipes in place, and a writer that counts
//! the bytes it passes on.

use crate::error::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes the output to `path`. A regular file (or a new path) is written through a temporary
/// sibling file that is renamed into place only on success, so a failed run leaves no partial
/// output; a symlink to a regular file keeps pointing at it (its target is replaced). Anything
/// else that exists (a device such as `/dev/null` or `/dev/stdout`, a pipe) is written in
/// place: renaming a file over it would replace the device itself. Writes of 64 KiB or more go
/// straight to the file; smaller ones (small tensors, headers) are gathered.
pub fn write_output(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let write = |file: File, shown: &Path| -> Result<()> {
        // 64 KiB, not more: a frame under the capacity is copied into the buffer first, and
        // every page of the buffer is first-touched once per run (a 1 MiB buffer took 250 page
        // faults and held every compressed frame in passing; BENCHMARKS.md, issue 16).
        let mut w = BufWriter::with_capacity(64 << 10, file);
        f(&mut w)?;
        w.flush()
            .with_context(|| format!("{}: write failed", shown.display()))
    };
    let target = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("{}: cannot open for writing", path.display()))?;
            return write(file, path);
        }
        Ok(_) => std::fs::canonicalize(path)
            .with_context(|| format!("{}: cannot resolve", path.display()))?,
        Err(_) => path.to_path_buf(),
    };
    let tmp = target.with_extension("bitlens-partial");
    let result = (|| {
        let file =
            File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        write(file, &tmp)?;
        std::fs::rename(&tmp, &target)
            .with_context(|| format!("{}: cannot rename", target.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Counts the bytes passed through to the inner writer.
pub struct CountingWriter<W: Write> {
    /// Where the bytes go.
    pub inner: W,
    /// How many went.
    pub count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
