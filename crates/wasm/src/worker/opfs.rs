//! [`OpfsFile`]: an output file of a compress / decompress job written straight from wasm memory
//! into the origin private file system (OPFS, File System Standard §4 `FileSystemSyncAccessHandle`)
//! and handed to the page as the `File` it becomes. Measured in headless Chromium on a 45 MB output
//! (tests/e2e/bench-page-io.mjs, BENCHMARKS.md): 1 MiB writes through a sync access handle took
//! 15 ms to the `File` on the page, against 44–49 ms for the 8 MiB chunks copied into fresh
//! JavaScript buffers, posted and folded into a `Blob` on the page; with a codec running between
//! the writes, 12 ms against 45 ms on top of the codec. The bytes go to the page cache of a file
//! on disk (no flush: it is a scratch file), so outputs of any size leave memory bounded.
//!
//! `web/worker.js` gives the job loop this page's output directory (one per page, removed by a
//! later page once this one is gone); browsers without sync access handles get `None` and the
//! chunks posted as before.
//!
//! The handles are web-sys': gloo has no file system access API, and gloo-file's `Blob`s are
//! read and made in memory, not written to a file on disk.

use crate::error::Failure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    File, FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetFileOptions,
    FileSystemSyncAccessHandle,
};

/// A new file of the output directory, open for writing from this worker.
pub struct OpfsFile {
    dir: FileSystemDirectoryHandle,
    name: String,
    file: FileSystemFileHandle,
    handle: FileSystemSyncAccessHandle,
    /// False until [`OpfsFile::finish`]: a file dropped before that is removed.
    done: bool,
}

impl OpfsFile {
    /// Creates (or empties) the file `name` in `dir` and opens it for writing.
    pub async fn create(dir: &FileSystemDirectoryHandle, name: &str) -> Result<OpfsFile, Failure> {
        let options = FileSystemGetFileOptions::new();
        options.set_create(true);
        let file: FileSystemFileHandle =
            JsFuture::from(dir.get_file_handle_with_options(name, &options))
                .await
                .map_err(|e| Failure::js(&e))?
                .unchecked_into();
        let handle: FileSystemSyncAccessHandle = JsFuture::from(file.create_sync_access_handle())
            .await
            .map_err(|e| Failure::js(&e))?
            .unchecked_into();
        handle.truncate_with_u32(0).map_err(|e| Failure::js(&e))?;
        Ok(OpfsFile {
            dir: dir.clone(),
            name: name.to_owned(),
            file,
            handle,
            done: false,
        })
    }

    /// Appends `bytes`, straight from wasm memory (a sync access handle writes at its cursor,
    /// which each write advances). The job's output comes in chunks of
    /// [`CHUNK_BYTES`](crate::sink::CHUNK_BYTES).
    pub fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = self
                .handle
                .write_with_u8_array(rest)
                .map_err(|e| std::io::Error::other(Failure::js(&e).0))?
                as usize;
            if n == 0 || n > rest.len() {
                return Err(std::io::Error::other(format!(
                    "the browser wrote {n} of {} bytes",
                    rest.len()
                )));
            }
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Closes the file and returns it as the `File` the page downloads.
    pub async fn finish(mut self) -> Result<File, Failure> {
        self.handle.close();
        let file = JsFuture::from(self.file.get_file())
            .await
            .map_err(|e| Failure::js(&e))?
            .unchecked_into();
        self.done = true;
        Ok(file)
    }
}

impl Drop for OpfsFile {
    fn drop(&mut self) {
        if !self.done {
            // A failed or abandoned output: close it and remove it (nothing waits for that).
            self.handle.close();
            let removed = JsFuture::from(self.dir.remove_entry(&self.name));
            wasm_bindgen_futures::spawn_local(async move {
                let _ = removed.await;
            });
        }
    }
}
