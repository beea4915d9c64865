//! A restricted unpickler: it reads the pickle opcodes `torch.save` emits (protocols 2–5) into a
//! small tree of [`Object`]s and never calls anything.
//!
//! Python's `pickle` runs code by design: `GLOBAL` imports any callable and `REDUCE` calls it. This
//! machine instead resolves `GLOBAL` / `STACK_GLOBAL` only against the caller's allow-list (any
//! other global is [`PickleError::ForbiddenGlobal`], naming it as `module.name`), and records
//! `REDUCE` / `NEWOBJ` / `BUILD` as [`Object::Call`] nodes for the caller to interpret — the one
//! exception is `collections.OrderedDict()`, which becomes an ordinary [`Object::Dict`] so the
//! `SETITEMS` that follow can fill it. Persistent ids (`BINPERSID`) become [`Object::PersId`].
//!
//! Objects live in an arena and refer to each other by [`ObjId`], so memo gets (`BINGET`) of a
//! container still being built share it as Python would, and a self-referential pickle is just a
//! cycle in the arena; whoever walks the tree must bound its depth and visits (the PyTorch reader
//! does). Every object, memo entry, stack slot and mark costs at least one opcode byte, so memory
//! stays proportional to the pickle's length; lengths read from the pickle are checked against the
//! bytes that remain before anything is allocated.
//!
//! Opcode semantics follow CPython's `Lib/pickle.py` / `Lib/pickletools.py` (PEP 307, 3154, 574).

mod machine;

pub use machine::{parse, Parsed};

/// An index into [`Pickle::objects`].
pub type ObjId = usize;

/// One unpickled object.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits an `i64`.
    Int(i64),
    /// A larger integer: little-endian two's complement bytes (as `LONG1` / `LONG4` store it).
    BigInt(Vec<u8>),
    /// A float.
    Float(f64),
    /// A `str`.
    Str(String),
    /// `bytes` / `bytearray`.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<ObjId>),
    /// A tuple.
    Tuple(Vec<ObjId>),
    /// A set or frozenset, in pickle order.
    Set(Vec<ObjId>),
    /// A dict or `collections.OrderedDict`, in insertion order (a repeated key replaces the value
    /// in place, as Python does).
    Dict(Vec<(ObjId, ObjId)>),
    /// An allow-listed global (`module.name`), not imported.
    Global(String),
    /// `func(*args)` recorded, not called (`REDUCE`, `NEWOBJ`), with the `BUILD` state if any.
    Call {
        /// The allow-listed callable, as `module.name`.
        func: String,
        /// The argument tuple.
        args: ObjId,
        /// The state a later `BUILD` gave the result.
        state: Option<ObjId>,
    },
    /// A persistent id (`BINPERSID`): a reference to data outside the pickle.
    PersId(ObjId),
}

/// An unpickled object tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Pickle {
    /// The arena; objects refer to each other by index.
    pub objects: Vec<Object>,
    /// The object `STOP` returned.
    pub root: ObjId,
}

impl Pickle {
    /// The object with id `id` (`Object::None` for an id outside the arena, which the machine
    /// never produces).
    pub fn get(&self, id: ObjId) -> &Object {
        self.objects.get(id).unwrap_or(&Object::None)
    }
}

/// Why a pickle was rejected. Offsets are byte offsets in the buffer given to [`parse`] (the
/// caller adds where that buffer sits in the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PickleError {
    /// The pickle ends before `STOP` or in the middle of an opcode's argument.
    #[error("pickle truncated at byte {offset}: opcode argument or STOP missing")]
    Truncated {
        /// Where the missing bytes would start.
        offset: u64,
    },
    /// A byte that is no pickle opcode.
    #[error("unknown pickle opcode 0x{opcode:02x} at byte {offset}")]
    UnknownOpcode {
        /// Its offset.
        offset: u64,
        /// The byte.
        opcode: u8,
    },
    /// A real opcode this reader refuses (text protocol 0/1 forms that call classes, extension
    /// registry, out-of-band buffers).
    #[error(
        "pickle opcode {name} at byte {offset} is not supported (torch.save does not emit it)"
    )]
    UnsupportedOpcode {
        /// Its offset.
        offset: u64,
        /// Its pickletools name.
        name: &'static str,
    },
    /// A `PROTO` beyond protocol 5.
    #[error("pickle protocol {version} at byte {offset} is newer than 5")]
    UnsupportedProtocol {
        /// Its offset.
        offset: u64,
        /// The protocol.
        version: u8,
    },
    /// An opcode needs more stack items than there are (above the last mark).
    #[error("pickle stack underflow at byte {offset} ({name})")]
    StackUnderflow {
        /// Its offset.
        offset: u64,
        /// The opcode's name.
        name: &'static str,
    },
    /// A mark-consuming opcode with no `MARK` before it.
    #[error("pickle opcode {name} at byte {offset} has no MARK")]
    NoMark {
        /// Its offset.
        offset: u64,
        /// The opcode's name.
        name: &'static str,
    },
    /// A memo get of an index never put.
    #[error("pickle memo index {index} at byte {offset} was never stored")]
    MemoMissing {
        /// Its offset.
        offset: u64,
        /// The index.
        index: u64,
    },
    /// A global outside the allow-list; nothing was imported or called.
    #[error("pickle global `{global}` at byte {offset} is not allowed (only torch tensor rebuild functions, storage types and OrderedDict are); nothing was executed")]
    ForbiddenGlobal {
        /// Its offset.
        offset: u64,
        /// `module.name`.
        global: String,
    },
    /// A string that is not UTF-8 (or a `GLOBAL` line without its newline).
    #[error("pickle string at byte {offset} is not valid UTF-8")]
    BadUtf8 {
        /// Its offset.
        offset: u64,
    },
    /// An opcode applied to an object of the wrong kind (`SETITEMS` on a list, `REDUCE` of a
    /// non-global, a `STACK_GLOBAL` of non-strings, …).
    #[error("pickle opcode {name} at byte {offset}: {expected}")]
    WrongType {
        /// Its offset.
        offset: u64,
        /// The opcode's name.
        name: &'static str,
        /// What it needed.
        expected: &'static str,
    },
}
