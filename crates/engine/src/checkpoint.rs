//! Resolving a user's path or URL to the files of one checkpoint (which files; whether they make
//! one checkpoint is [`bitlens_tensors::Checkpoint`]'s rule).
//!
//! [`Model::open`] takes a file of any format bitlens reads (safetensors, GGUF, PyTorch `.pt`/`.bin`,
//! NumPy `.npy`/`.npz`: told by its first bytes, [`format::open`]), a `*.safetensors.index.json`, or
//! a directory; `inspect` and `diff` read it. A directory is one checkpoint when it holds an index
//! or `.safetensors` files (its other files — `training_args.bin`, configs — ignored, as a Hugging
//! Face folder wants); otherwise its `.npy` files are one checkpoint whose arrays are named by file
//! stem (as `numpy.savez` names an `.npz`'s), and each of its other files whose first bytes a
//! reader knows is a checkpoint of its own ([`Model::open_all`], what `inspect DIR` shows; [`Model::open`] takes such a
//! directory only when it holds one). [`Checkpoint::open`] is the same for safetensors only, with
//! their parsed headers (what snapshots are made from).

use crate::bail;
use crate::error::{Context, Result};
use crate::http::HttpSource;
use crate::progress::Progress;
use crate::source::{is_url, FileSource, Head, Source};
use bitlens_tensors::format::{self, Layout};
use bitlens_tensors::naming;
use bitlens_tensors::{read_header, Header, ReadAt, ShardIndex};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// Refuses a shard index longer than [`bitlens_tensors::index::MAX_INDEX_LEN`] before it is read;
/// `name` is its path or URL, for the message.
fn check_index_len(len: u64, name: &str) -> Result<()> {
    let max = bitlens_tensors::index::MAX_INDEX_LEN;
    if len > max {
        return Err(bitlens_tensors::IndexError::TooLarge { len, max }).context(name.to_owned());
    }
    Ok(())
}

/// Reads a file's layout: a safetensors file through its header (kept), any other format by its
/// reader, told by the first bytes. A file named `*.safetensors` is always read as safetensors,
/// so one that is not gets the safetensors rules' message ("not a safetensors file", "runs past
/// the end"…). Errors name the file and the format's rule (`model.pt: PyTorch: forbidden global
/// …`).
fn read_layout(path: &Path, src: &Source) -> Result<(Layout, Option<Header>)> {
    let n = src.size().min(format::DETECT_BYTES as u64) as usize;
    let mut first = vec![0u8; n];
    src.read_exact_at(0, &mut first)
        .with_context(|| path.display().to_string())?;
    let head = Head { src, first };
    if naming::is_safetensors_name(&path.to_string_lossy())
        || format::detect(&head.first, src.size()) == Some(format::Format::Safetensors)
    {
        let header = read_header(&head).with_context(|| path.display().to_string())?;
        return Ok((format::safetensors::layout(&header), Some(header)));
    }
    // Over HTTP every read is a request: a PyTorch zip's storages are located from its central
    // directory (`Locate::Predict`) instead of one request per local header.
    let locate = match src {
        Source::Http(_) => format::zip::Locate::Predict,
        Source::File(_) => format::zip::Locate::Verify,
    };
    let layout = format::open_with(&head, locate).with_context(|| path.display().to_string())?;
    Ok((layout, None))
}

/// One file of a checkpoint of any format, opened, with its layout.
pub struct ModelFile {
    /// Where it is: a local path, or the URL as given.
    pub path: PathBuf,
    /// Its data source.
    pub source: Source,
    /// Its tensors and metadata.
    pub layout: Layout,
    /// Its parsed header, for a safetensors file.
    pub header: Option<Header>,
}

/// A checkpoint of any format given on the command line: one file, or an index and its shards, or
/// a directory of safetensors files.
pub struct Model {
    /// The shard index, when the checkpoint has one.
    pub index: Option<ShardIndex>,
    /// Its files in order.
    pub files: Vec<ModelFile>,
    /// What the user should know that did not stop the opening (tensors missing from the index).
    pub warnings: Vec<String>,
}

/// One safetensors file of a checkpoint, opened and with its header parsed.
pub struct Shard {
    /// Where it is: a local path, or the URL as given.
    pub path: PathBuf,
    /// Its data source.
    pub source: Source,
    /// Its validated header.
    pub header: Header,
}

/// A safetensors file to read: where it is (for messages), its bytes and its parsed header — a
/// [`Shard`]'s, or a file made in memory.
pub struct ShardFile<'a> {
    /// Its path, as messages name it.
    pub path: &'a Path,
    /// Its bytes.
    pub source: &'a dyn bitlens_snapshot::Source,
    /// Its validated header.
    pub header: &'a Header,
}

impl Shard {
    /// The shard as a [`ShardFile`].
    pub fn as_file(&self) -> ShardFile<'_> {
        ShardFile {
            path: &self.path,
            source: &self.source,
            header: &self.header,
        }
    }
}

/// A checkpoint given on the command line: one file, an index and its shards, or a directory.
pub struct Checkpoint {
    /// The shard index, when the checkpoint has one.
    pub index: Option<ShardIndex>,
    /// Its files in order.
    pub shards: Vec<Shard>,
    /// What the user should know that did not stop the opening (tensors missing from the index).
    pub warnings: Vec<String>,
}

impl Checkpoint {
    /// Resolves and opens a safetensors checkpoint: a `.safetensors` file, a `*.index.json`, or a
    /// directory holding either an index or `.safetensors` files. Another format is refused,
    /// naming it.
    pub fn open(input: &Path) -> Result<Checkpoint> {
        let model = Model::open(input)?;
        let mut shards = Vec::with_capacity(model.files.len());
        for f in model.files {
            let Some(header) = f.header else {
                bail!(
                    "{}: a {} file; this command takes safetensors checkpoints only",
                    f.path.display(),
                    f.layout.kind
                );
            };
            shards.push(Shard {
                path: f.path,
                source: f.source,
                header,
            });
        }
        Ok(Checkpoint {
            index: model.index,
            shards,
            warnings: model.warnings,
        })
    }

    /// Passes its warnings on.
    pub fn warn(&self, progress: &dyn Progress) {
        for w in &self.warnings {
            progress.warn(w);
        }
    }

    /// Bytes of tensor data over all shards.
    pub fn data_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.header.data_len()).sum()
    }
}

/// The format the file at `path` starts like, when a reader knows it ([`format::detect`]).
fn detected(path: &Path) -> Result<Option<format::Format>> {
    let src = FileSource::open(path)?;
    let mut first = vec![0u8; src.size().min(format::DETECT_BYTES as u64) as usize];
    src.read_exact_at(0, &mut first)
        .with_context(|| path.display().to_string())?;
    Ok(format::detect(&first, src.size()))
}

impl Model {
    /// Resolves and opens a path or URL: a checkpoint file of any format, a `*.index.json`, or a
    /// directory holding an index, `.safetensors` files, `.npy` files, or one checkpoint file of
    /// another format.
    /// A directory of several files of other formats is refused, naming them (see
    /// [`Model::open_all`]).
    pub fn open(input: &Path) -> Result<Model> {
        let mut all = Self::open_all(input)?;
        if all.len() == 1 {
            return Ok(all.remove(0));
        }
        let names: Vec<String> = all
            .iter()
            .flat_map(|m| &m.files)
            .filter_map(|f| f.path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        bail!(
            "{}: the directory holds {} checkpoints ({}); name one",
            input.display(),
            all.len(),
            names.join(", ")
        )
    }

    /// Every checkpoint a path or URL names: what [`Model::open`] opens, except that a directory
    /// with neither an index nor `.safetensors` files gives its `.npy` files as one checkpoint
    /// (arrays named by file stem) and each of its other files that a reader knows by its first
    /// bytes (GGUF, PyTorch, `.npz`, whatever their names) as a checkpoint of its own, in name
    /// order; files no reader knows (configs, READMEs) are skipped.
    pub fn open_all(input: &Path) -> Result<Vec<Model>> {
        if is_url(input)? {
            return Ok(vec![Self::open_url(&input.to_string_lossy())?]);
        }
        let meta = std::fs::metadata(input)
            .with_context(|| format!("{}: cannot open", input.display()))?;
        if meta.is_dir() {
            let mut others = Vec::new();
            let mut indexes = Vec::new();
            let mut files = Vec::new();
            for entry in std::fs::read_dir(input)
                .with_context(|| format!("{}: cannot list directory", input.display()))?
            {
                let path = entry?.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if naming::is_shard_index_name(name) {
                    indexes.push(path);
                } else if naming::is_safetensors_name(name) && path.is_file() {
                    files.push(path);
                } else if path.is_file() {
                    others.push(path);
                }
            }
            indexes.sort();
            files.sort();
            return match indexes.as_slice() {
                [index] => Ok(vec![Self::open_index(index)?]),
                [] if files.is_empty() => Self::open_others(input, others),
                [] => Ok(vec![Self::from_files(input, None, files, false)?]),
                _ => bail!(
                    "{}: more than one *.safetensors.index.json in directory; name one",
                    input.display()
                ),
            };
        }
        if input.to_string_lossy().ends_with(".json") {
            return Ok(vec![Self::open_index(input)?]);
        }
        Ok(vec![Self::from_files(
            input,
            None,
            vec![input.to_path_buf()],
            false,
        )?])
    }

    /// The files of directory `dir` (which has no safetensors files) that a reader knows by their
    /// first bytes, one checkpoint each.
    fn open_others(dir: &Path, mut files: Vec<PathBuf>) -> Result<Vec<Model>> {
        files.sort();
        let mut out = Vec::new();
        // The `.npy` files are one checkpoint, in the place of the first of them.
        let mut arrays = Vec::new();
        let mut arrays_at = None;
        for path in files {
            match detected(&path)? {
                Some(format::Format::Npy) => {
                    arrays_at.get_or_insert(out.len());
                    arrays.push(path);
                }
                Some(_) => out.push(Self::from_files(&path, None, vec![path.clone()], false)?),
                None => {}
            }
        }
        if let Some(at) = arrays_at {
            out.insert(at, Self::from_files(dir, None, arrays, true)?);
        }
        if out.is_empty() {
            bail!(
                "{}: no checkpoint in directory (no .safetensors files or index, and no file \
                 whose first bytes are GGUF, PyTorch or NumPy)",
                dir.display()
            );
        }
        Ok(out)
    }

    fn open_index(index_path: &Path) -> Result<Model> {
        let (index, files) = read_index(index_path)?;
        Self::from_files(index_path, Some(index), files, false)
    }

    /// A URL: a `*.json` shard index (shards resolved next to it) or one file.
    fn open_url(url: &str) -> Result<Model> {
        let path_part = url.split(['?', '#']).next().unwrap_or(url);
        if !path_part.ends_with(".json") {
            return Self::from_files(Path::new(url), None, vec![PathBuf::from(url)], false);
        }
        let src = HttpSource::open(url)?;
        check_index_len(src.size(), url)?;
        let bytes = src.read_all().with_context(|| url.to_owned())?;
        let index = ShardIndex::parse(&bytes).with_context(|| url.to_owned())?;
        let files = index
            .shards
            .iter()
            .map(|s| Ok(PathBuf::from(bitlens_remote::join(url, s)?)))
            .collect::<Result<_>>()?;
        Self::from_files(Path::new(url), Some(index), files, false)
    }

    /// Opens the files and checks they make one checkpoint by the shared rules
    /// ([`bitlens_tensors::Checkpoint`]); `input` is what the user named, for messages. With
    /// `arrays_by_stem` (the `.npy` files of a directory), each file's array is named by its
    /// file stem ([`naming::npy_array_name`]).
    fn from_files(
        input: &Path,
        index: Option<ShardIndex>,
        files: Vec<PathBuf>,
        arrays_by_stem: bool,
    ) -> Result<Self> {
        let mut opened = Vec::with_capacity(files.len());
        let mut parsed = Vec::with_capacity(files.len());
        // Shards open in parallel (for URLs: their probe and header requests overlap); an error is
        // still the first one in shard order.
        let layouts: Vec<Result<(Source, Layout, Option<Header>)>> = files
            .par_iter()
            .map(|path| {
                let source = Source::open(path)?;
                let (layout, header) = read_layout(path, &source)?;
                Ok((source, layout, header))
            })
            .collect();
        for (path, result) in files.into_iter().zip(layouts) {
            let (source, mut layout, header) = result?;
            if arrays_by_stem {
                let name = naming::npy_array_name(&path.to_string_lossy()).to_owned();
                for e in &mut layout.entries {
                    e.name.clone_from(&name);
                }
            }
            parsed.push(bitlens_tensors::Shard {
                path: path.display().to_string(),
                layout,
            });
            opened.push((path, source, header));
        }
        let checkpoint = bitlens_tensors::Checkpoint::new(parsed, index)
            .with_context(|| input.display().to_string())?;
        let warnings = checkpoint
            .unlisted()
            .into_iter()
            .map(|(i, extra)| {
                format!(
                    "{}: {extra} tensor(s) not listed in {}",
                    opened[i].0.display(),
                    input.display()
                )
            })
            .collect();
        let (parsed, index) = checkpoint.into_parts();
        let files = opened
            .into_iter()
            .zip(parsed)
            .map(|((path, source, header), shard)| ModelFile {
                path,
                source,
                layout: shard.layout,
                header,
            })
            .collect();
        Ok(Model {
            index,
            files,
            warnings,
        })
    }

    /// Passes its warnings on.
    pub fn warn(&self, progress: &dyn Progress) {
        for w in &self.warnings {
            progress.warn(w);
        }
    }

    /// Bytes of tensor data over all files (each tensor's bytes in element order).
    pub fn data_bytes(&self) -> u64 {
        self.files
            .iter()
            .flat_map(|f| &f.layout.entries)
            .map(format::bytes::byte_len)
            .sum()
    }
}

/// A local shard index, parsed, and its shard files (next to it), each checked to exist.
pub(crate) fn read_index(index_path: &Path) -> Result<(ShardIndex, Vec<PathBuf>)> {
    let len = std::fs::metadata(index_path)
        .with_context(|| format!("{}: cannot open", index_path.display()))?
        .len();
    // Checked before reading so a huge file is never loaded.
    check_index_len(len, &index_path.display().to_string())?;
    let bytes = std::fs::read(index_path)
        .with_context(|| format!("{}: cannot read", index_path.display()))?;
    let index = ShardIndex::parse(&bytes).with_context(|| index_path.display().to_string())?;
    let dir = index_path.parent().unwrap_or(Path::new("."));
    for shard in &index.shards {
        let path = dir.join(shard);
        if !path.is_file() {
            bail!(
                "{}: shard `{shard}` not found (looked for {})",
                index_path.display(),
                path.display()
            );
        }
    }
    let files = index.shards.iter().map(|s| dir.join(s)).collect();
    Ok((index, files))
}
