//! Checkpoints and snapshots by URL, with `Range` requests (see [`crate::ui::io::remote`]): a
//! `.safetensors` file, a `*.safetensors.index.json` with its shards (resolved next to it, their
//! headers read in parallel), a file of another format (its layout read by a worker), or a
//! snapshot for the codec panel. Each remote checkpoint file's sidecar is fetched while its header
//! is read (module `sidecar`) and judged against the header bytes read anyway
//! ([`crate::model::sidecar::judge`]): a match fills its statistics at once.

use super::describe::Layouts;
use super::{other_format, sidecar, LoadError, Loaded, Outcome, Source, SNAPSHOT_MAGIC};
use crate::model::checkpoint::{Checkpoint, FileInfo};
use crate::model::grouping::{self, InputFile};
use crate::model::link::url_path;
use crate::model::sidecar::{judge, Verdict};
use crate::ui::io::remote::{self, FetchError, Probe};
use bitlens_protocol::{FileRef, RemoteFile};
use bitlens_report::sidecar::Fingerprint;
use bitlens_tensors::index::MAX_INDEX_LEN;
use bitlens_tensors::source::Prefix;
use bitlens_tensors::{Header, ShardIndex};
use futures_util::future::{join, join_all};

/// What one URL gave.
enum Opened {
    /// A checkpoint: its name (as grouping names it), files, sources, index, and what each file's
    /// sidecar gave.
    Checkpoint {
        name: String,
        files: Vec<FileInfo>,
        sources: Vec<Source>,
        index: Option<ShardIndex>,
        sidecars: Vec<Verdict>,
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

/// The remote safetensors file at `url`, probed: its header read (one request) and its sidecar
/// (`stats`, else next to it) fetched at once, then judged against the header bytes.
async fn safetensors_file(
    url: &str,
    probe: &Probe,
    credentials: bool,
    stats: Option<&str>,
) -> Result<(FileInfo, Verdict), FetchError> {
    let (prefix, fetched) = join(
        remote::read_prefix(url, probe, credentials),
        sidecar::fetch(url, stats, credentials),
    )
    .await;
    let prefix = prefix?;
    let file = FileInfo::safetensors(url_path(url), Header::parse(&prefix, probe.size)?);
    let fingerprint = Fingerprint::read_safetensors(&Prefix {
        bytes: &prefix,
        size: probe.size,
    })
    .map_err(|e| e.to_string());
    let verdict = judge(fetched, &file, fingerprint.as_ref().map_err(Clone::clone));
    Ok((file, verdict))
}

/// A shard of a remote index: probed, then read as [`safetensors_file`] (its sidecar next to it).
async fn remote_shard(
    url: String,
    credentials: bool,
) -> Result<(FileInfo, Source, Verdict), (String, FetchError)> {
    let read = async {
        let probe = remote::probe(&url, credentials).await?;
        let (file, verdict) = safetensors_file(&url, &probe, credentials, None).await?;
        Ok((file, probe.size, verdict))
    };
    let (file, size, verdict) = read.await.map_err(|e| (url.clone(), e))?;
    let source = FileRef::Url(RemoteFile {
        url,
        size,
        credentials,
    });
    Ok((file, source, verdict))
}

/// Opens one URL: a shard index with its shards, a snapshot, or a checkpoint file (whose sidecar
/// is `stats`, else next to it).
async fn open_url(
    url: &str,
    stats: Option<&str>,
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
        let read = join_all(shard_urls.into_iter().map(|u| remote_shard(u, credentials))).await;
        let mut files = Vec::with_capacity(read.len());
        let mut sources = Vec::with_capacity(read.len());
        let mut verdicts = Vec::with_capacity(read.len());
        for r in read {
            let (f, s, v) = r.map_err(|e| {
                let mut e = failed(e, offers);
                e.reason = format!("{} (so checkpoint {url} was not loaded)", e.reason);
                e
            })?;
            files.push(f);
            sources.push(s);
            verdicts.push(v);
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
        let mut sidecars = Vec::with_capacity(g.shards.len());
        for &i in &g.shards {
            order.push((files[i - 1].clone(), sources[i - 1].clone()));
            sidecars.push(std::mem::take(&mut verdicts[i - 1]));
        }
        let (files, sources) = order.into_iter().unzip();
        return Ok(Opened::Checkpoint {
            name: g.name,
            files,
            sources,
            index: Some(index),
            sidecars,
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
    let (file, verdict) = if other_format(&probe.first8, probe.size).is_some() {
        let mut layouts = Layouts::default();
        let (described, fetched) = join(
            layouts.read(&source),
            sidecar::fetch(url, stats, credentials),
        )
        .await;
        let described = described.map_err(|reason| url_error(url, reason))?;
        let file = FileInfo::other(path.clone(), described.layout);
        let fingerprint = described
            .fingerprint
            .ok_or_else(|| "the worker took no fingerprint".to_owned());
        let verdict = judge(fetched, &file, fingerprint.as_ref().map_err(Clone::clone));
        (file, verdict)
    } else {
        safetensors_file(url, &probe, credentials, stats)
            .await
            .map_err(|e| failed((url.to_owned(), e), offers))?
    };
    Ok(Opened::Checkpoint {
        name: path,
        files: vec![file],
        sources: vec![source],
        index: None,
        sidecars: vec![verdict],
    })
}

/// Loads checkpoints (and snapshots) from URLs, one checkpoint per URL, in the given order (the
/// compare order); ids start at `first_id`. The URLs are read in parallel. `stats[i]`, when
/// given, names the sidecar of the file at `urls[i]` (else it is looked for next to the file; the
/// shards of an index are always looked for next to them).
pub async fn load_urls(
    urls: Vec<String>,
    stats: &[String],
    first_id: u32,
    credentials: bool,
) -> Outcome {
    let mut out = Outcome::default();
    let opened = join_all(urls.iter().enumerate().map(|(i, u)| async move {
        let mut offers = Vec::new();
        let given = stats.get(i).map(String::as_str);
        let r = open_url(u, given, credentials, &mut offers).await;
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
                sidecars,
            }) => match Checkpoint::new(id, name, files, index) {
                Ok(mut checkpoint) => {
                    for (file, verdict) in sidecars.into_iter().enumerate() {
                        out.notes.extend(verdict.note);
                        if let Some(stats) = verdict.stats {
                            checkpoint.set_file_stats(file, stats);
                        }
                    }
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
