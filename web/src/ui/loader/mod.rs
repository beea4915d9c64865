//! Files → checkpoints: read and parse shard indexes, group the files (see
//! [`crate::model::grouping`]), read every shard's header, and build the checkpoints. Each problem
//! becomes a [`LoadError`] naming the file and the reason; the other files load normally. Files that
//! start with the snapshot magic `BITLENS\0` are set aside as snapshots for the codec panel, and so
//! is a shard index given with a snapshot of each of its shards (`<shard>.bls`, the directory
//! `bitlens compress INDEX -o DIR` writes): decompressing the set restores the index as it is.
//!
//! URLs ([`load_urls`], module `urls`) load the same way with `Range` requests (see
//! [`crate::ui::io::remote`]): a `.safetensors` file, a `*.safetensors.index.json` with its shards
//! (resolved next to it, their headers read in parallel), or a snapshot (first 8 bytes
//! `BITLENS\0`) for the codec panel. Their paths are the URLs' host and path, so grouping, labels
//! and the checkpoint rules are the files'. A remote file's sidecar of precomputed statistics
//! (module `sidecar`) fills its tensors' statistics when it matches the file.
//!
//! Files and URLs of other formats — told by their first bytes ([`format::detect`]): GGUF,
//! PyTorch (zip or legacy pickle), NumPy `.npy` / `.npz` — are single-file checkpoints whose
//! layout a worker reads (module `describe`: `WorkerRequest::Describe`, synchronous reads of only
//! the bytes that describe the tensors), except the `.npy` files of one directory, which are one
//! checkpoint with arrays named by file stem ([`naming::npy_array_name`]); safetensors files keep
//! the path above.

mod describe;
mod sidecar;
mod urls;

pub use urls::load_urls;

use crate::model::checkpoint::{Checkpoint, FileInfo};
use crate::model::grouping::{self, InputFile};
use crate::ui::io::blob::{read_header, read_range, size};
use crate::ui::io::files::Picked;
use bitlens_protocol::{FileRef, RemoteFile};
use bitlens_tensors::format::{self, Format};
use bitlens_tensors::index::MAX_INDEX_LEN;
use bitlens_tensors::{naming, ShardIndex};
use describe::Layouts;
use std::collections::BTreeMap;
use web_sys::Blob;

/// Where a checkpoint file's bytes are: a `Blob` the visitor gave, or a URL.
pub type Source = FileRef<Blob>;

/// A file that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// The file (or checkpoint) name.
    pub file: String,
    /// Why.
    pub reason: String,
}

/// A checkpoint ready to show, with the sources of its files (same order as `checkpoint.files`).
pub struct Loaded {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its files' data.
    pub sources: Vec<Source>,
    /// The URL it was opened from (a file or a shard index), for remote checkpoints.
    pub url: Option<String>,
    /// Its shard index file (path and data), if it was given one.
    pub index: Option<(String, Blob)>,
}

/// What one load produced.
#[derive(Default)]
pub struct Outcome {
    /// Checkpoints in order.
    pub loaded: Vec<Loaded>,
    /// Problems, one per bad file.
    pub errors: Vec<LoadError>,
    /// Snapshot files (`BITLENS\0` magic): path and data.
    pub snapshots: Vec<(String, Blob)>,
    /// Shard indexes of snapshot sets (every shard given as `<shard>.bls`): path and data.
    pub snapshot_indexes: Vec<(String, Blob)>,
    /// Remote snapshots: name and file.
    pub remote_snapshots: Vec<(String, RemoteFile)>,
    /// URLs whose server ignores `Range` and that are small enough to be read whole on request.
    pub offers: Vec<String>,
    /// What the visitor should know that is no error: a remote file's statistics taken from its
    /// sidecar, or its sidecar ignored and why.
    pub notes: Vec<String>,
}

/// True when every shard `index` names was given as a snapshot `<shard>.bls` next to it.
fn indexes_snapshots(index_path: &str, index: &ShardIndex, snapshots: &[(String, Blob)]) -> bool {
    let dir = index_path.rfind('/').map_or("", |i| &index_path[..=i]);
    !index.shards.is_empty()
        && index.shards.iter().all(|shard| {
            let want = format!("{dir}{shard}.bls");
            snapshots.iter().any(|(p, _)| *p == want)
        })
}

/// The format of a file from its first bytes, when it is one a worker describes (not
/// safetensors, which the page reads itself, and not an unknown one, which stays on that path and
/// gets its error).
fn other_format(first: &[u8], file_size: u64) -> Option<Format> {
    format::detect(first, file_size).filter(|f| *f != Format::Safetensors)
}

/// The format of a blob, when a worker describes it.
async fn blob_format(blob: &Blob) -> Option<Format> {
    let n = size(blob).min(format::DETECT_BYTES as u64);
    let first = read_range(blob, 0, n).await.ok()?;
    other_format(&first, size(blob))
}

/// The first bytes of a bitlens snapshot.
const SNAPSHOT_MAGIC: &[u8; 8] = b"BITLENS\0";

/// True when the blob starts with the snapshot magic.
async fn is_snapshot(blob: &Blob) -> bool {
    size(blob) >= 8
        && read_range(blob, 0, 8)
            .await
            .is_ok_and(|b| b == SNAPSHOT_MAGIC)
}

async fn read_index(blob: &Blob) -> Result<ShardIndex, String> {
    let len = size(blob);
    if len > MAX_INDEX_LEN {
        return Err(format!(
            "index is {len} bytes, over the limit of {MAX_INDEX_LEN}"
        ));
    }
    let bytes = read_range(blob, 0, len).await.map_err(|e| e.to_string())?;
    ShardIndex::parse(&bytes).map_err(|e| e.to_string())
}

/// Adds the checkpoint `name` of `files` (read from `sources`) with the next id, or its error.
fn push_checkpoint(
    out: &mut Outcome,
    id: &mut u32,
    name: String,
    files: Vec<FileInfo>,
    sources: Vec<Source>,
) {
    match Checkpoint::new(*id, name.clone(), files, None) {
        Ok(checkpoint) => {
            out.loaded.push(Loaded {
                checkpoint,
                sources,
                url: None,
                index: None,
            });
            *id += 1;
        }
        Err(e) => out.errors.push(LoadError {
            file: name,
            reason: e.to_string(),
        }),
    }
}

/// Loads the given files; checkpoint ids start at `first_id`.
pub async fn load(picked: Vec<Picked>, first_id: u32) -> Outcome {
    let mut out = Outcome::default();
    let mut rest = Vec::with_capacity(picked.len());
    for p in picked {
        if !grouping::is_index(&p.path) && is_snapshot(&p.blob).await {
            out.snapshots.push((p.path, p.blob));
        } else {
            rest.push(p);
        }
    }
    let picked = rest;
    let mut inputs = Vec::with_capacity(picked.len());
    let mut indexes = Vec::with_capacity(picked.len());
    let mut kept = Vec::with_capacity(picked.len());
    for p in picked {
        let mut shard_names = None;
        let mut index = None;
        if grouping::is_index(&p.path) {
            match read_index(&p.blob).await {
                Ok(ix) if indexes_snapshots(&p.path, &ix, &out.snapshots) => {
                    out.snapshot_indexes.push((p.path.clone(), p.blob.clone()));
                    continue;
                }
                Ok(ix) => {
                    shard_names = Some(ix.shards.clone());
                    index = Some(ix);
                }
                Err(reason) => out.errors.push(LoadError {
                    file: p.path.clone(),
                    reason,
                }),
            }
        }
        inputs.push(InputFile {
            path: p.path.clone(),
            shard_names,
        });
        indexes.push(index);
        kept.push(p);
    }
    let picked = kept;
    let mut id = first_id;
    // Files of other formats: one checkpoint each, named by its path, its layout read by a worker;
    // except inside a directory of safetensors files, whose other files stay ignored as before
    // (a Hugging Face folder's `training_args.bin` is no checkpoint).
    let skip = grouping::beside_safetensors(inputs.iter().map(|f| f.path.as_str()));
    let mut layouts = Layouts::default();
    let mut grouped = Vec::with_capacity(inputs.len());
    let mut rest = Vec::with_capacity(picked.len());
    let mut rest_indexes = Vec::with_capacity(picked.len());
    // The `.npy` files of one directory are one checkpoint, arrays named by file stem (as
    // `bitlens inspect DIR` reads them); a loose `.npy` file is a checkpoint of its own.
    let mut arrays: BTreeMap<String, Vec<(FileInfo, Source)>> = BTreeMap::new();
    for (((input, p), index), skip) in inputs.into_iter().zip(picked).zip(indexes).zip(skip) {
        let format = if skip || index.is_some() {
            None
        } else {
            blob_format(&p.blob).await
        };
        let Some(format) = format else {
            grouped.push(input);
            rest.push(p);
            rest_indexes.push(index);
            continue;
        };
        let source = FileRef::Blob(p.blob.clone());
        let mut layout = match layouts.read(&source).await {
            Ok(described) => described.layout,
            Err(reason) => {
                out.errors.push(LoadError {
                    file: p.path.clone(),
                    reason,
                });
                continue;
            }
        };
        let dir = grouping::split_dir(&p.path).0;
        if format == Format::Npy && !dir.is_empty() {
            let name = naming::npy_array_name(&p.path).to_owned();
            for e in &mut layout.entries {
                e.name.clone_from(&name);
            }
            arrays
                .entry(dir.to_owned())
                .or_default()
                .push((FileInfo::other(p.path.clone(), layout), source));
            continue;
        }
        let files = vec![FileInfo::other(p.path.clone(), layout)];
        push_checkpoint(&mut out, &mut id, p.path, files, vec![source]);
    }
    for (dir, members) in arrays {
        let (files, sources) = members.into_iter().unzip();
        push_checkpoint(&mut out, &mut id, dir, files, sources);
    }
    let (inputs, picked, mut indexes) = (grouped, rest, rest_indexes);
    let groups = grouping::group(&inputs);
    for r in groups.rejected {
        out.errors.push(LoadError {
            file: inputs[r.file].path.clone(),
            reason: r.reason,
        });
    }
    'groups: for g in groups.groups {
        let mut files = Vec::with_capacity(g.shards.len());
        let mut blobs = Vec::with_capacity(g.shards.len());
        for &s in &g.shards {
            match read_header(&picked[s].blob).await {
                Ok(header) => {
                    files.push(FileInfo::safetensors(picked[s].path.clone(), header));
                    blobs.push(FileRef::Blob(picked[s].blob.clone()));
                }
                Err(e) => {
                    let reason = if g.shards.len() > 1 {
                        format!("{e} (so checkpoint `{}` was not loaded)", g.name)
                    } else {
                        e.to_string()
                    };
                    out.errors.push(LoadError {
                        file: picked[s].path.clone(),
                        reason,
                    });
                    continue 'groups;
                }
            }
        }
        let index = g.index.and_then(|i| indexes[i].take());
        match Checkpoint::new(id, g.name.clone(), files, index) {
            Ok(checkpoint) => {
                let index = g
                    .index
                    .map(|i| (picked[i].path.clone(), picked[i].blob.clone()));
                out.loaded.push(Loaded {
                    checkpoint,
                    sources: blobs,
                    url: None,
                    index,
                });
                id += 1;
            }
            Err(e) => out.errors.push(LoadError {
                file: g.name,
                reason: e.to_string(),
            }),
        }
    }
    out
}
