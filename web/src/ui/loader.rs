//! Files → checkpoints: read and parse shard indexes, group the files (see
//! [`crate::model::grouping`]), read every shard's header, and build the checkpoints. Each problem
//! becomes a [`LoadError`] naming the file and the reason; the other files load normally. Files that
//! start with the snapshot magic `BITLENS\0` are set aside as snapshots for the codec panel, and so
//! is a shard index given with a snapshot of each of its shards (`<shard>.bls`, the directory
//! `bitlens compress INDEX -o DIR` writes): decompressing the set restores the index as it is.

use crate::model::checkpoint::{Checkpoint, FileInfo};
use crate::model::grouping::{self, InputFile};
use crate::ui::io::blob::{read_header, read_range, size};
use crate::ui::io::files::Picked;
use bitlens_tensors::index::MAX_INDEX_LEN;
use bitlens_tensors::ShardIndex;
use web_sys::Blob;

/// A file that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// The file (or checkpoint) name.
    pub file: String,
    /// Why.
    pub reason: String,
}

/// A checkpoint ready to show, with the blobs of its files (same order as `checkpoint.files`).
pub struct Loaded {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its files' data.
    pub blobs: Vec<Blob>,
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
    let groups = grouping::group(&inputs);
    for r in groups.rejected {
        out.errors.push(LoadError {
            file: inputs[r.file].path.clone(),
            reason: r.reason,
        });
    }
    let mut id = first_id;
    'groups: for g in groups.groups {
        let mut files = Vec::with_capacity(g.shards.len());
        let mut blobs = Vec::with_capacity(g.shards.len());
        for &s in &g.shards {
            match read_header(&picked[s].blob).await {
                Ok(header) => {
                    files.push(FileInfo {
                        path: picked[s].path.clone(),
                        header,
                    });
                    blobs.push(picked[s].blob.clone());
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
                    blobs,
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
