//! Files → checkpoints: read and parse shard indexes, group the files (see
//! [`crate::model::grouping`]), read every shard's header, and build the checkpoints. Each problem
//! becomes a [`LoadError`] naming the file and the reason; the other files load normally. Files that
//! start with the snapshot magic `BITLENS\0` are set aside as snapshots for the codec panel, and so
//! is a shard index given with a snapshot of each of its shards (`<shard>.bls`, the directory
//! `bitlens compress INDEX -o DIR` writes): decompressing the set restores the index as it is.
//!
//! URLs ([`load_urls`]) load the same way with `Range` requests (see [`crate::ui::io::remote`]): a
//! `.safetensors` file, a `*.safetensors.index.json` with its shards (resolved next to it, their
//! headers read in parallel), or a snapshot (first 8 bytes `BITLENS\0`) for the codec panel. Their
//! paths are the URLs' host and path, so grouping, labels and the checkpoint rules are the files'.
//!
//! Files and URLs of other formats — told by their first bytes ([`format::detect`]): GGUF,
//! PyTorch (zip or legacy pickle), NumPy `.npy` / `.npz` — are single-file checkpoints whose
//! layout a worker reads ([`Describer`]: `WorkerRequest::Describe`, synchronous reads of only the
//! bytes that describe the tensors), except the `.npy` files of one directory, which are one
//! checkpoint with arrays named by file stem ([`naming::npy_array_name`]); safetensors files keep
//! the path above.

use crate::model::checkpoint::{Checkpoint, FileInfo};
use crate::model::grouping::{self, InputFile};
use crate::model::link::url_path;
use crate::ui::io::blob::{js_error_text, read_header, read_range, size};
use crate::ui::io::files::Picked;
use crate::ui::io::remote::{self, FetchError};
use crate::ui::jobs::to_ref;
use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::Event;
use bitlens_protocol::{FileRef, JobResult, RemoteFile, WorkerEvent, WorkerRequest};
use bitlens_tensors::format::{self, Format, Layout};
use bitlens_tensors::index::MAX_INDEX_LEN;
use bitlens_tensors::{naming, ShardIndex};
use futures_util::future::join_all;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use web_sys::Blob;
use yew::Callback;

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

/// The answer a [`Describer`] waits for, and how to wake it.
#[derive(Default)]
struct Reply {
    event: Option<Event>,
    wake: Option<js_sys::Function>,
}

/// A worker that reads the layouts of files of other formats than safetensors, one at a time.
struct Describer {
    worker: WorkerHandle,
    reply: Rc<RefCell<Reply>>,
}

impl Describer {
    fn start() -> Result<Describer, String> {
        let reply = Rc::new(RefCell::new(Reply::default()));
        let to = reply.clone();
        let events = Callback::from(move |e: Event| {
            // A request ends with `Done` or `Failed` (a crash too); nothing else is awaited.
            if matches!(e, WorkerEvent::Done { .. } | WorkerEvent::Failed { .. }) {
                let wake = {
                    let mut r = to.borrow_mut();
                    r.event = Some(e);
                    r.wake.take()
                };
                if let Some(w) = wake {
                    let _ = w.call0(&JsValue::NULL);
                }
            }
        });
        let worker = WorkerHandle::spawn("worker.js", "worker", events)?;
        Ok(Describer { worker, reply })
    }

    /// The layout of `file`, read in the worker.
    async fn layout(&self, file: &Source) -> Result<Layout, String> {
        let mut wake = None;
        let answered = js_sys::Promise::new(&mut |resolve, _| wake = Some(resolve));
        *self.reply.borrow_mut() = Reply { event: None, wake };
        self.worker.post(&WorkerRequest::Describe {
            task: 0,
            file: to_ref(file),
        })?;
        JsFuture::from(answered)
            .await
            .map_err(|e| js_error_text(&e))?;
        let event = self.reply.borrow_mut().event.take();
        match event {
            Some(WorkerEvent::Done {
                result: JobResult::Layout(layout),
                ..
            }) => Ok(*layout),
            Some(WorkerEvent::Failed { message, .. }) => Err(message),
            _ => Err("the worker answered without a layout".into()),
        }
    }
}

/// Layouts of the files of one load, by one worker started at the first one.
#[derive(Default)]
struct Layouts(Option<Describer>);

impl Layouts {
    async fn read(&mut self, file: &Source) -> Result<Layout, String> {
        if self.0.is_none() {
            self.0 = Some(Describer::start()?);
        }
        match &self.0 {
            Some(d) => d.layout(file).await,
            None => Err("no worker to read the file".into()),
        }
    }
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
            Ok(layout) => layout,
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

/// What one URL gave.
enum Opened {
    /// A checkpoint: its name (as grouping names it), files, sources and index.
    Checkpoint {
        name: String,
        files: Vec<FileInfo>,
        sources: Vec<Source>,
        index: Option<ShardIndex>,
    },
    /// A snapshot for the codec panel.
    Snapshot(String, RemoteFile),
}

/// A load error about `url`.
fn url_error(url: &str, reason: String) -> LoadError {
    LoadError {
        file: url.to_owned(),
        reason,
    }
}

/// The header of the remote safetensors file at `url`, probed first.
async fn remote_file(
    url: String,
    credentials: bool,
) -> Result<(FileInfo, Source), (String, FetchError)> {
    let probe = remote::probe(&url, credentials)
        .await
        .map_err(|e| (url.clone(), e))?;
    let header = remote::read_header(&url, &probe, credentials)
        .await
        .map_err(|e| (url.clone(), e))?;
    let file = RemoteFile {
        url: url.clone(),
        size: probe.size,
        credentials,
    };
    Ok((
        FileInfo::safetensors(url_path(&url), header),
        FileRef::Url(file),
    ))
}

/// Opens one URL: a shard index with its shards, a snapshot, or a safetensors file.
async fn open_url(
    url: &str,
    credentials: bool,
    offers: &mut Vec<String>,
) -> Result<Opened, LoadError> {
    bitlens_remote::check_url(url).map_err(|e| url_error(url, e.to_string()))?;
    let failed = |(u, e): (String, FetchError), offers: &mut Vec<String>| {
        if e.small_enough() {
            offers.push(u.clone());
        }
        url_error(&u, e.to_string())
    };
    let path = url_path(url);
    if grouping::is_index(&path) {
        let probe = remote::probe(url, credentials)
            .await
            .map_err(|e| failed((url.to_owned(), e), offers))?;
        if probe.size > MAX_INDEX_LEN {
            return Err(url_error(
                url,
                format!(
                    "index is {} bytes, over the limit of {MAX_INDEX_LEN}",
                    probe.size
                ),
            ));
        }
        let (bytes, _) = remote::read(url, 0, probe.size, Some(probe.size), credentials)
            .await
            .map_err(|e| failed((url.to_owned(), FetchError::Remote(e)), offers))?;
        let index = ShardIndex::parse(&bytes).map_err(|e| url_error(url, e.to_string()))?;
        let shard_urls = index
            .shards
            .iter()
            .map(|s| bitlens_remote::join(url, s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| url_error(url, e.to_string()))?;
        let read = join_all(shard_urls.into_iter().map(|u| remote_file(u, credentials))).await;
        let mut files = Vec::with_capacity(read.len());
        let mut sources = Vec::with_capacity(read.len());
        for r in read {
            let (f, s) = r.map_err(|e| {
                let mut e = failed(e, offers);
                e.reason = format!("{} (so checkpoint {url} was not loaded)", e.reason);
                e
            })?;
            files.push(f);
            sources.push(s);
        }
        // The same grouping as for files: the index claims its shards, and names the checkpoint.
        let mut inputs = vec![InputFile {
            path: path.clone(),
            shard_names: Some(index.shards.clone()),
        }];
        inputs.extend(files.iter().map(|f| InputFile {
            path: f.path.clone(),
            shard_names: None,
        }));
        let groups = grouping::group(&inputs);
        if let Some(r) = groups.rejected.first() {
            return Err(url_error(url, r.reason.clone()));
        }
        let g = groups
            .groups
            .into_iter()
            .find(|g| g.index == Some(0))
            .ok_or_else(|| url_error(url, "the index names no shards".into()))?;
        // Shards in the group's order (its indexes count the index file first).
        let mut order = Vec::with_capacity(g.shards.len());
        for &i in &g.shards {
            order.push((files[i - 1].clone(), sources[i - 1].clone()));
        }
        let (files, sources) = order.into_iter().unzip();
        return Ok(Opened::Checkpoint {
            name: g.name,
            files,
            sources,
            index: Some(index),
        });
    }
    let probe = remote::probe(url, credentials)
        .await
        .map_err(|e| failed((url.to_owned(), e), offers))?;
    if &probe.first8 == SNAPSHOT_MAGIC {
        let file = RemoteFile {
            url: url.to_owned(),
            size: probe.size,
            credentials,
        };
        return Ok(Opened::Snapshot(crate::model::link::file_name(url), file));
    }
    let source = FileRef::Url(RemoteFile {
        url: url.to_owned(),
        size: probe.size,
        credentials,
    });
    let file = if other_format(&probe.first8, probe.size).is_some() {
        let layout = Layouts::default()
            .read(&source)
            .await
            .map_err(|reason| url_error(url, reason))?;
        FileInfo::other(path.clone(), layout)
    } else {
        let header = remote::read_header(url, &probe, credentials)
            .await
            .map_err(|e| failed((url.to_owned(), e), offers))?;
        FileInfo::safetensors(path.clone(), header)
    };
    Ok(Opened::Checkpoint {
        name: path,
        files: vec![file],
        sources: vec![source],
        index: None,
    })
}

/// Loads checkpoints (and snapshots) from URLs, one checkpoint per URL, in the given order (the
/// compare order); ids start at `first_id`. The URLs are read in parallel.
pub async fn load_urls(urls: Vec<String>, first_id: u32, credentials: bool) -> Outcome {
    let mut out = Outcome::default();
    let opened = join_all(urls.iter().map(|u| async move {
        let mut offers = Vec::new();
        let r = open_url(u, credentials, &mut offers).await;
        (r, offers)
    }))
    .await;
    let mut id = first_id;
    for (url, (r, offers)) in urls.into_iter().zip(opened) {
        out.offers.extend(offers);
        match r {
            Ok(Opened::Snapshot(name, file)) => out.remote_snapshots.push((name, file)),
            Ok(Opened::Checkpoint {
                name,
                files,
                sources,
                index,
            }) => match Checkpoint::new(id, name, files, index) {
                Ok(checkpoint) => {
                    out.loaded.push(Loaded {
                        checkpoint,
                        sources,
                        url: Some(url),
                        index: None,
                    });
                    id += 1;
                }
                Err(e) => out.errors.push(url_error(&url, e.to_string())),
            },
            Err(e) => out.errors.push(e),
        }
    }
    out
}
