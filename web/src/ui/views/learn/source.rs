//! The tensors a lesson reads: the float tensors (bf16, fp16, fp32) of the active checkpoint (the
//! demo's when nothing else is open), read from its local files' `Blob`s or, for a checkpoint opened
//! by URL, with range requests of only the tensor's bytes; and the tensor picker every lesson shows.

use crate::model::checkpoint::Checkpoint;
use crate::model::format::bytes;
use crate::ui::io::blob::read_range;
use crate::ui::io::remote;
use crate::ui::loader::Source;
use bitlens_codecs::float::FloatFormat;
use bitlens_lessons::anatomy::Format;
use bitlens_protocol::FileRef;
use bitlens_tensors::Dtype;
use std::rc::Rc;
use web_sys::HtmlSelectElement;
use yew::html::Scope;
use yew::prelude::*;

/// The most bytes of one tensor a lesson reads (its first elements past that are left out: the
/// lessons compute on the page's thread).
pub const MAX_READ: u64 = 64 << 20;

/// One tensor a lesson can read.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSource {
    /// Its name.
    pub name: String,
    /// Its element type (bf16, fp16 or fp32).
    pub dtype: Dtype,
    /// Its shape.
    pub shape: Vec<u64>,
    /// The file holding it: a local `Blob` or a URL.
    pub file: Source,
    /// Where its data starts in the file.
    pub offset: u64,
    /// Bytes of data.
    pub bytes: u64,
}

impl TensorSource {
    /// Bytes per element.
    pub fn width(&self) -> usize {
        (self.dtype.bits() / 8) as usize
    }

    /// Elements.
    pub fn elements(&self) -> u64 {
        self.bytes / self.width() as u64
    }

    /// The codecs' float format of its elements.
    pub fn float_format(&self) -> FloatFormat {
        match self.dtype {
            Dtype::F16 => FloatFormat::F16,
            Dtype::F32 => FloatFormat::F32,
            _ => FloatFormat::Bf16,
        }
    }

    /// The anatomy format of its elements.
    pub fn format(&self) -> Format {
        match self.dtype {
            Dtype::F16 => Format::F16,
            Dtype::F32 => Format::F32,
            _ => Format::Bf16,
        }
    }

    /// Reads its data (at most [`MAX_READ`] bytes, whole elements).
    pub async fn read(&self) -> Result<Rc<Vec<u8>>, String> {
        self.read_first(MAX_READ).await.map(Rc::new)
    }

    /// Reads its first `max` bytes (whole elements; all of it when smaller): a `Blob` slice, or
    /// one range request (retried as every remote read) for a URL.
    pub async fn read_first(&self, max: u64) -> Result<Vec<u8>, String> {
        let w = self.width() as u64;
        let len = self.bytes.min(max / w * w);
        let read = match &self.file {
            FileRef::Blob(blob) => read_range(blob, self.offset, self.offset + len)
                .await
                .map_err(|e| e.to_string()),
            FileRef::Url(_) if len == 0 => Ok(Vec::new()),
            FileRef::Url(r) => remote::read(&r.url, self.offset, len, Some(r.size), r.credentials)
                .await
                .map(|(bytes, _)| bytes)
                .map_err(|e| e.to_string()),
        };
        read.map_err(|e| format!("{}: {e}", self.name))
    }

    /// Whether only its first [`MAX_READ`] bytes are read.
    pub fn truncated(&self) -> bool {
        self.bytes > MAX_READ
    }
}

/// The tensors of the lessons, compared by content (a new list re-renders only when it differs).
pub type Tensors = Rc<Vec<TensorSource>>;

/// The float tensors of checkpoint `c` whose files are `files`.
pub fn sources(c: Option<&Checkpoint>, files: Option<&Vec<Source>>) -> Tensors {
    let (Some(c), Some(files)) = (c, files) else {
        return Rc::new(Vec::new());
    };
    Rc::new(
        c.rows
            .iter()
            .filter(|r| matches!(r.dtype, Dtype::BF16 | Dtype::F16 | Dtype::F32) && r.bytes > 0)
            .filter_map(|r| {
                Some(TensorSource {
                    name: r.name.clone(),
                    dtype: r.dtype,
                    shape: r.shape.clone(),
                    file: files.get(r.file)?.clone(),
                    offset: r.offset,
                    bytes: r.bytes,
                })
            })
            .collect(),
    )
}

/// The tensor named `name`, else the largest one (the first of the largest).
pub fn pick<'a>(tensors: &'a [TensorSource], name: Option<&str>) -> Option<&'a TensorSource> {
    name.and_then(|n| tensors.iter().find(|t| t.name == n))
        .or_else(|| {
            let max = tensors.iter().map(|t| t.bytes).max()?;
            tensors.iter().find(|t| t.bytes == max)
        })
}

/// The tensor picker: a labelled `<select id="lesson-tensor">`.
pub fn picker(tensors: &[TensorSource], current: &str, on: Callback<String>) -> Html {
    let onchange = Callback::from(move |e: Event| {
        let s: HtmlSelectElement = e.target_unchecked_into();
        on.emit(s.value());
    });
    html! {
        <label class="control">
            { "Tensor " }
            <select id="lesson-tensor" {onchange}>
                { for tensors.iter().map(|t| html! {
                    <option value={t.name.clone()} selected={t.name == current}>
                        { format!("{} · {} {:?} · {}", t.name, t.dtype, t.shape, bytes(t.bytes)) }
                    </option>
                }) }
            </select>
        </label>
    }
}

/// A lesson's tensor: its name and, once read, its data.
#[derive(Default)]
pub struct Chosen {
    /// The tensor's name.
    pub name: String,
    /// Its data, once read (at most [`MAX_READ`] bytes).
    pub data: Option<Rc<Vec<u8>>>,
}

/// A tensor's data read, or why not, for the lesson that asked.
pub struct Arrived {
    name: String,
    result: Result<Rc<Vec<u8>>, String>,
}

impl Chosen {
    /// The tensor named `name` (a link's), else the largest.
    pub fn new(tensors: &[TensorSource], name: Option<&str>) -> Chosen {
        Chosen {
            name: pick(tensors, name)
                .map(|t| t.name.clone())
                .unwrap_or_default(),
            data: None,
        }
    }

    /// Where the chosen tensor is.
    pub fn source(&self, tensors: &[TensorSource]) -> Option<TensorSource> {
        pick(tensors, Some(&self.name)).cloned()
    }

    /// Starts reading the chosen tensor (the largest when `tensors` has none of that name); the
    /// lesson gets `msg(Arrived)`.
    pub fn load<C: Component>(
        &mut self,
        tensors: &[TensorSource],
        link: &Scope<C>,
        msg: fn(Arrived) -> C::Message,
    ) {
        let Some(t) = self.source(tensors) else {
            return;
        };
        self.name = t.name.clone();
        self.data = None;
        link.send_future(async move {
            let result = t.read().await;
            msg(Arrived {
                name: t.name,
                result,
            })
        });
    }

    /// Reads the chosen tensor again when the tensors changed (another checkpoint).
    pub fn follow<C: Component>(
        &mut self,
        old: &[TensorSource],
        new: &[TensorSource],
        link: &Scope<C>,
        msg: fn(Arrived) -> C::Message,
    ) {
        if old != new {
            self.load(new, link, msg);
        }
    }

    /// Keeps data that arrived for the chosen tensor: `None` when it is another's (the choice
    /// changed meanwhile), else whether it was read.
    pub fn arrive(&mut self, a: Arrived) -> Option<Result<(), String>> {
        if a.name != self.name {
            return None;
        }
        Some(a.result.map(|d| self.data = Some(d)))
    }
}
