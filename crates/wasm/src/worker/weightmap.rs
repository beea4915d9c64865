//! The weight map's requests: the cells of a window of one tensor
//! ([`bitlens_stats::weightmap::MapFold`]) and a few of its lanes exactly
//! ([`bitlens_stats::weightmap::elements`]), so a remote tensor's map fetches that tensor's
//! bytes only.
//!
//! A window's pieces that follow one another in the file are streamed ([`Windows`]: a `Blob`'s
//! BYOB stream, or `Range` requests already in flight for a URL), so the next piece arrives while
//! this one is folded; a lone small piece (a row of a narrow region of wide rows) is one
//! synchronous read (`FileReaderSync`, or one range request). A tensor that is not a plain byte
//! range (a deflated `.npz` member, a PyTorch view) is streamed through the tensor reader in
//! element order, synchronously.

use super::windows::Windows;
use crate::error::Failure;
use crate::source::FileSource;
use bitlens_protocol::js::Js;
use bitlens_protocol::{FileRef, JobResult};
use bitlens_stats::weightmap::{self, Layer, MapFold, Piece, Window, LOCAL_GAP, REMOTE_GAP};
use bitlens_tensors::format::{Data, Entry};
use bitlens_tensors::ReadAt;

/// Bytes below which a run of adjacent pieces is read with one synchronous read rather than a
/// stream (opening a stream costs more than it saves on a small read).
const STREAM_MIN: u64 = 1 << 20;

/// Rows that skip at most this many bytes between them are read as one stretch: a local file's
/// reads cost little, a remote one's round trips more.
fn gap_of(file: &FileRef<Js>) -> u64 {
    match file {
        FileRef::Blob(_) => LOCAL_GAP,
        FileRef::Url(_) => REMOTE_GAP,
    }
}

/// An error of the map of `entry` in `file`, naming the tensor (and the URL of a remote file).
fn named(file: &FileRef<Js>, entry: &Entry, error: impl std::fmt::Display) -> Failure {
    match file {
        FileRef::Blob(_) => Failure(format!("{}: {error}", entry.name)),
        FileRef::Url(r) => Failure(format!("{}: {}: {error}", r.url, entry.name)),
    }
}

/// One tensor a map reads: its file and where its bytes start there.
struct Tensor {
    file: FileRef<Js>,
    offset: u64,
    len: u64,
}

impl Tensor {
    /// `entry` in `file`, when its bytes are a plain range.
    fn of(file: &FileRef<Js>, entry: &Entry) -> Option<Tensor> {
        match entry.data {
            Data::Range { offset, len } => Some(Tensor {
                file: file.clone(),
                offset,
                len,
            }),
            _ => None,
        }
    }
}

/// The cells of `window` of `entry` in `file` for `layer` (`other`: the changes layer's second
/// checkpoint).
pub async fn weight_map(
    file: FileRef<Js>,
    entry: &Entry,
    other: Option<(FileRef<Js>, Entry)>,
    window: &Window,
    layer: Layer,
) -> Result<JobResult, Failure> {
    let fold = MapFold::new(entry, other.as_ref().map(|(_, e)| e), window, layer)
        .map_err(|e| named(&file, entry, e))?;
    let other = other.filter(|_| fold.pairs());
    let gap = other
        .as_ref()
        .map_or(gap_of(&file), |(f, _)| gap_of(&file).max(gap_of(f)));
    let a = Tensor::of(&file, entry);
    let b = other.as_ref().map(|(f, e)| Tensor::of(f, e));
    let tile = match (a, b) {
        (Some(a), None) => streamed(fold, &a, None, gap).await,
        (Some(a), Some(Some(b))) => streamed(fold, &a, Some(&b), gap).await,
        _ => synchronous(file.clone(), entry, other, window, layer, gap),
    }
    .map_err(|e| named(&file, entry, e.0))?;
    Ok(JobResult::WeightMap(Box::new(tile)))
}

/// The map of tensors stored as plain byte ranges: runs of adjacent pieces streamed, lone small
/// pieces read at once.
async fn streamed(
    mut fold: MapFold,
    a: &Tensor,
    b: Option<&Tensor>,
    gap: u64,
) -> Result<bitlens_stats::weightmap::Tile, Failure> {
    let pieces = fold.pieces(true, gap);
    let mut reads = Reads { a, b, open: None };
    let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
    for run in runs(&pieces) {
        let (first, last) = (run[0], run[run.len() - 1]);
        let (start, end) = (first.offset, last.offset + last.len);
        let longest = run.iter().map(|p| p.len).max().unwrap_or(0) as usize;
        buf_a.resize(longest, 0);
        if b.is_some() {
            buf_b.resize(longest, 0);
        }
        if end - start < STREAM_MIN {
            for p in run {
                let n = p.len as usize;
                let nb = n.min(buf_b.len());
                reads.at(p, &mut buf_a[..n], &mut buf_b[..nb])?;
                fold.fold(p, &buf_a[..n], b.map(|_| &buf_b[..n]))
                    .map_err(|e| Failure(e.to_string()))?;
            }
            continue;
        }
        let mut stream_a =
            Windows::open(a.file.clone(), a.offset + start, a.offset + end, longest)?;
        let mut stream_b = match b {
            Some(b) => Some(Windows::open(
                b.file.clone(),
                b.offset + start,
                b.offset + end,
                longest,
            )?),
            None => None,
        };
        for p in run {
            let n = p.len as usize;
            stream_a.next(&mut buf_a[..n]).await?;
            if let Some(s) = &mut stream_b {
                s.next(&mut buf_b[..n]).await?;
            }
            fold.fold(p, &buf_a[..n], b.map(|_| &buf_b[..n]))
                .map_err(|e| Failure(e.to_string()))?;
        }
    }
    Ok(fold.finish())
}

/// Runs of pieces each starting where the one before it ends.
fn runs(pieces: &[Piece]) -> impl Iterator<Item = &[Piece]> {
    pieces.chunk_by(|p, q| p.offset + p.len == q.offset)
}

/// Synchronous reads of single pieces of one or two tensors.
struct Reads<'a> {
    a: &'a Tensor,
    b: Option<&'a Tensor>,
    /// The files' sources, opened on the first read.
    open: Option<(FileSource, Option<FileSource>)>,
}

impl Reads<'_> {
    /// Reads piece `p` of `a` into `out_a` (and of `b` into `out_b`).
    fn at(&mut self, p: &Piece, out_a: &mut [u8], out_b: &mut [u8]) -> Result<(), Failure> {
        if self.open.is_none() {
            let src = |t: &Tensor| FileSource::open(t.file.clone()).map(|s| s.read_ahead(0));
            let b = self.b.map(src).transpose()?;
            self.open = Some((src(self.a)?, b));
        }
        let Some((sa, sb)) = &self.open else {
            return Ok(());
        };
        let read = |s: &FileSource, t: &Tensor, out: &mut [u8]| {
            if p.offset + p.len > t.len {
                return Err(Failure(format!(
                    "piece at byte {} of {} lies past the tensor's {} bytes",
                    p.offset, p.len, t.len
                )));
            }
            s.read_exact_at(t.offset + p.offset, out)
                .map_err(|e| Failure(e.to_string()))
        };
        read(sa, self.a, out_a)?;
        if let (Some(sb), Some(b)) = (sb, self.b) {
            read(sb, b, out_b)?;
        }
        Ok(())
    }
}

/// The map of a tensor that is not a plain byte range, read synchronously in element order.
fn synchronous(
    file: FileRef<Js>,
    entry: &Entry,
    other: Option<(FileRef<Js>, Entry)>,
    window: &Window,
    layer: Layer,
    gap: u64,
) -> Result<bitlens_stats::weightmap::Tile, Failure> {
    let src = FileSource::open(file)?.read_ahead(0);
    let other = other
        .map(|(f, e)| FileSource::open(f).map(|s| (s.read_ahead(0), e)))
        .transpose()?;
    weightmap::weight_map(
        &src,
        entry,
        other.as_ref().map(|(s, e)| (s as &dyn ReadAt, e)),
        window,
        layer,
        gap,
    )
    .map_err(|e| Failure(e.to_string()))
}

/// Lanes `start..start + count` of `entry` in `file`, exactly.
pub fn elements(
    file: FileRef<Js>,
    entry: &Entry,
    start: u64,
    count: u64,
) -> Result<JobResult, Failure> {
    let src = FileSource::open(file.clone())?.read_ahead(0);
    let lanes =
        weightmap::elements(&src, entry, start, count).map_err(|e| named(&file, entry, e))?;
    Ok(JobResult::Elements(lanes))
}
