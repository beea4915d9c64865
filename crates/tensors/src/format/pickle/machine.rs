//! The opcode loop of the restricted unpickler: a stack of object ids, a mark stack and a memo,
//! driven by CPython's opcode table (`Lib/pickletools.py`), without calling anything.

use super::{ObjId, Object, Pickle, PickleError};
use std::collections::HashMap;

/// A parsed pickle and where it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The object tree.
    pub pickle: Pickle,
    /// The offset just after `STOP` in the buffer (where a following pickle or data starts).
    pub end: usize,
}

/// Parses one pickle from the start of `buf` up to its `STOP`. `allowed` says whether a global
/// (`module.name`) may appear; any other global is an error and nothing is ever called. Bytes
/// after `STOP` are not looked at.
pub fn parse(buf: &[u8], allowed: &dyn Fn(&str) -> bool) -> Result<Parsed, PickleError> {
    let mut m = Machine {
        buf,
        pos: 0,
        op_at: 0,
        objects: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        memo_far: HashMap::new(),
        memo_count: 0,
        dict_keys: HashMap::new(),
    };
    let root = m.run(allowed)?;
    Ok(Parsed {
        pickle: Pickle {
            objects: m.objects,
            root,
        },
        end: m.pos,
    })
}

struct Machine<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of the opcode being run (for errors).
    op_at: usize,
    objects: Vec<Object>,
    stack: Vec<ObjId>,
    marks: Vec<usize>,
    /// The memo: indices up to the number of objects made so far (all a pickler makes: it
    /// numbers its puts from 0) in a vector, others in a map; so its size stays proportional to
    /// the objects, whatever indices a hostile pickle names.
    memo: Vec<Option<ObjId>>,
    memo_far: HashMap<u64, ObjId>,
    /// Distinct indices in `memo`.
    memo_count: usize,
    /// Key positions of the dicts `SETITEM(S)` has filled.
    dict_keys: HashMap<ObjId, HashMap<KeyRepr, usize>>,
}

type R<T> = Result<T, PickleError>;

impl<'a> Machine<'a> {
    fn at(&self) -> u64 {
        self.op_at as u64
    }

    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(PickleError::Truncated {
                offset: self.buf.len() as u64,
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A length from the pickle, as `usize` (too large for this machine means truncated: the
    /// bytes cannot be there).
    fn len_u64(&mut self, n: u64) -> R<usize> {
        usize::try_from(n).map_err(|_| PickleError::Truncated {
            offset: self.buf.len() as u64,
        })
    }

    fn utf8(&self, bytes: &[u8]) -> R<String> {
        String::from_utf8(bytes.to_vec()).map_err(|_| PickleError::BadUtf8 { offset: self.at() })
    }

    /// A `\n`-terminated line (for `GLOBAL`).
    fn line(&mut self) -> R<String> {
        let rest = &self.buf[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err(PickleError::Truncated {
                offset: self.buf.len() as u64,
            });
        };
        let s = self.utf8(&rest[..n])?;
        self.pos += n + 1;
        Ok(s)
    }

    fn new_obj(&mut self, o: Object) -> ObjId {
        self.objects.push(o);
        self.objects.len() - 1
    }

    fn push(&mut self, o: Object) {
        let id = self.new_obj(o);
        self.stack.push(id);
    }

    /// The lowest stack index the current opcode may pop (above the last mark).
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self, name: &'static str) -> R<ObjId> {
        if self.stack.len() <= self.floor() {
            return Err(PickleError::StackUnderflow {
                offset: self.at(),
                name,
            });
        }
        self.stack.pop().ok_or(PickleError::StackUnderflow {
            offset: self.at(),
            name,
        })
    }

    fn top(&self, name: &'static str) -> R<ObjId> {
        if self.stack.len() <= self.floor() {
            return Err(PickleError::StackUnderflow {
                offset: self.at(),
                name,
            });
        }
        self.stack
            .last()
            .copied()
            .ok_or(PickleError::StackUnderflow {
                offset: self.at(),
                name,
            })
    }

    /// Pops everything above the last mark, and the mark.
    fn pop_mark(&mut self, name: &'static str) -> R<Vec<ObjId>> {
        let Some(mark) = self.marks.pop() else {
            return Err(PickleError::NoMark {
                offset: self.at(),
                name,
            });
        };
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    fn pop_n(&mut self, n: usize, name: &'static str) -> R<Vec<ObjId>> {
        if self.stack.len() < self.floor() + n {
            return Err(PickleError::StackUnderflow {
                offset: self.at(),
                name,
            });
        }
        Ok(self.stack.split_off(self.stack.len() - n))
    }

    fn memo_put(&mut self, index: u64, name: &'static str) -> R<()> {
        let top = self.top(name)?;
        if let Some(slot) = self.memo_far.get_mut(&index) {
            *slot = top;
            return Ok(());
        }
        match usize::try_from(index) {
            Ok(i) if i <= self.objects.len() => {
                if i >= self.memo.len() {
                    self.memo.resize(i + 1, None);
                }
                if self.memo[i].replace(top).is_none() {
                    self.memo_count += 1;
                }
            }
            _ => {
                self.memo_far.insert(index, top);
            }
        }
        Ok(())
    }

    /// Entries put so far (`MEMOIZE` stores at this index).
    fn memo_len(&self) -> u64 {
        (self.memo_count + self.memo_far.len()) as u64
    }

    fn memo_get(&mut self, index: u64) -> R<()> {
        let near = usize::try_from(index)
            .ok()
            .and_then(|i| self.memo.get(i).copied().flatten());
        let found = near.or_else(|| self.memo_far.get(&index).copied());
        let Some(id) = found else {
            return Err(PickleError::MemoMissing {
                offset: self.at(),
                index,
            });
        };
        self.stack.push(id);
        Ok(())
    }

    fn wrong(&self, name: &'static str, expected: &'static str) -> PickleError {
        PickleError::WrongType {
            offset: self.at(),
            name,
            expected,
        }
    }

    fn global(&mut self, module: &str, name: &str, allowed: &dyn Fn(&str) -> bool) -> R<()> {
        let full = format!("{module}.{name}");
        if !allowed(&full) {
            return Err(PickleError::ForbiddenGlobal {
                offset: self.at(),
                global: full,
            });
        }
        self.push(Object::Global(full));
        Ok(())
    }

    fn str_of(&self, id: ObjId, name: &'static str) -> R<String> {
        match self.objects.get(id) {
            Some(Object::Str(s)) => Ok(s.clone()),
            _ => Err(self.wrong(name, "module and name must be strings")),
        }
    }

    /// `func(*args)` recorded: an `OrderedDict()` becomes a dict (so `SETITEMS` can fill it),
    /// anything else a [`Object::Call`].
    fn call(&mut self, func: ObjId, args: ObjId, name: &'static str) -> R<()> {
        let Some(Object::Global(f)) = self.objects.get(func) else {
            return Err(self.wrong(name, "the callable must be an allowed global"));
        };
        let f = f.clone();
        let Some(Object::Tuple(items)) = self.objects.get(args) else {
            return Err(self.wrong(name, "the arguments must be a tuple"));
        };
        if f == "collections.OrderedDict" {
            let mut pairs = Vec::new();
            match items.as_slice() {
                [] => {}
                [list] => {
                    // OrderedDict([(k, v), ...])
                    let Some(Object::List(l) | Object::Tuple(l)) = self.objects.get(*list) else {
                        return Err(self.wrong(name, "OrderedDict takes a list of pairs"));
                    };
                    for p in l {
                        match self.objects.get(*p) {
                            Some(Object::Tuple(kv) | Object::List(kv)) if kv.len() == 2 => {
                                pairs.push((kv[0], kv[1]))
                            }
                            _ => return Err(self.wrong(name, "OrderedDict takes a list of pairs")),
                        }
                    }
                }
                _ => return Err(self.wrong(name, "OrderedDict takes at most one argument")),
            }
            self.push(Object::Dict(pairs));
        } else {
            self.push(Object::Call {
                func: f,
                args,
                state: None,
            });
        }
        Ok(())
    }

    /// Sets `kv`'s pairs in the dict `target`; a key already there (by value, for scalar keys)
    /// keeps its place and takes the new value, as in Python. Each dict gets a key index on first
    /// use, so a run of `SETITEM`s costs linear time.
    fn set_items(&mut self, target: ObjId, kv: &[ObjId], name: &'static str) -> R<()> {
        if !kv.len().is_multiple_of(2) {
            return Err(self.wrong(name, "keys and values must pair up"));
        }
        let Some(Object::Dict(d)) = self.objects.get(target) else {
            return Err(self.wrong(name, "the target must be a dict"));
        };
        let objects = &self.objects;
        let index = self.dict_keys.entry(target).or_insert_with(|| {
            d.iter()
                .enumerate()
                .filter_map(|(i, (k, _))| key_repr(objects, *k).map(|k| (k, i)))
                .collect()
        });
        let keys: Vec<Option<KeyRepr>> = kv.chunks(2).map(|p| key_repr(objects, p[0])).collect();
        let Some(Object::Dict(d)) = self.objects.get_mut(target) else {
            return Err(PickleError::WrongType {
                offset: self.op_at as u64,
                name,
                expected: "the target must be a dict",
            });
        };
        for (pair, key) in kv.chunks(2).zip(keys) {
            let pair = (pair[0], pair[1]);
            match key {
                Some(k) => match index.get(&k) {
                    Some(&i) => d[i] = pair,
                    None => {
                        index.insert(k, d.len());
                        d.push(pair);
                    }
                },
                None => d.push(pair),
            }
        }
        Ok(())
    }

    fn append(&mut self, target: ObjId, items: Vec<ObjId>, name: &'static str) -> R<()> {
        match self.objects.get_mut(target) {
            Some(Object::List(l) | Object::Set(l)) => {
                l.extend(items);
                Ok(())
            }
            _ => Err(self.wrong(name, "the target must be a list or set")),
        }
    }

    fn run(&mut self, allowed: &dyn Fn(&str) -> bool) -> R<ObjId> {
        loop {
            self.op_at = self.pos;
            let op = self.u8()?;
            match op {
                // PROTO
                0x80 => {
                    let v = self.u8()?;
                    if v > 5 {
                        return Err(PickleError::UnsupportedProtocol {
                            offset: self.at(),
                            version: v,
                        });
                    }
                }
                // FRAME: framing is only a read-ahead hint; the opcodes inside are read as usual.
                0x95 => {
                    self.u64()?;
                }
                // STOP
                b'.' => return self.pop("STOP"),
                b'}' => self.push(Object::Dict(Vec::new())),
                b']' => self.push(Object::List(Vec::new())),
                b')' => self.push(Object::Tuple(Vec::new())),
                0x8f => self.push(Object::Set(Vec::new())),
                // MARK
                b'(' => self.marks.push(self.stack.len()),
                // POP
                b'0' => {
                    if self.stack.len() > self.floor() {
                        self.pop("POP")?;
                    } else {
                        self.pop_mark("POP")?;
                    }
                }
                // POP_MARK
                b'1' => {
                    self.pop_mark("POP_MARK")?;
                }
                // DUP
                b'2' => {
                    let t = self.top("DUP")?;
                    self.stack.push(t);
                }
                b'N' => self.push(Object::None),
                0x88 => self.push(Object::Bool(true)),
                0x89 => self.push(Object::Bool(false)),
                // BININT, BININT1, BININT2
                b'J' => {
                    let v = i32::from_le_bytes(self.array()?);
                    self.push(Object::Int(v.into()));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Object::Int(v.into()));
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.array()?);
                    self.push(Object::Int(v.into()));
                }
                // LONG1, LONG4
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        u64::from(self.u8()?)
                    } else {
                        u64::from(self.u32()?)
                    };
                    let n = self.len_u64(n)?;
                    let bytes = self.take(n)?;
                    self.push(long(bytes));
                }
                // BINFLOAT (big-endian)
                b'G' => {
                    let v = f64::from_be_bytes(self.array()?);
                    self.push(Object::Float(v));
                }
                // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
                0x8c | b'X' | 0x8d => {
                    let n = match op {
                        0x8c => u64::from(self.u8()?),
                        b'X' => u64::from(self.u32()?),
                        _ => self.u64()?,
                    };
                    let n = self.len_u64(n)?;
                    let bytes = self.take(n)?;
                    let s = self.utf8(bytes)?;
                    self.push(Object::Str(s));
                }
                // SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8; SHORT_BINSTRING, BINSTRING
                // (Python 2 `str`, read as bytes)
                b'C' | b'B' | 0x8e | 0x96 | b'U' | b'T' => {
                    let n = match op {
                        b'C' | b'U' => u64::from(self.u8()?),
                        b'B' | b'T' => u64::from(self.u32()?),
                        _ => self.u64()?,
                    };
                    let n = self.len_u64(n)?;
                    let bytes = self.take(n)?.to_vec();
                    self.push(Object::Bytes(bytes));
                }
                // TUPLE1..3, TUPLE
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let items = self.pop_n(n, "TUPLEn")?;
                    self.push(Object::Tuple(items));
                }
                b't' => {
                    let items = self.pop_mark("TUPLE")?;
                    self.push(Object::Tuple(items));
                }
                // LIST, DICT (mark-based forms)
                b'l' => {
                    let items = self.pop_mark("LIST")?;
                    self.push(Object::List(items));
                }
                b'd' => {
                    let items = self.pop_mark("DICT")?;
                    let d = self.new_obj(Object::Dict(Vec::new()));
                    self.set_items(d, &items, "DICT")?;
                    self.stack.push(d);
                }
                // FROZENSET
                0x91 => {
                    let items = self.pop_mark("FROZENSET")?;
                    self.push(Object::Set(items));
                }
                // BINPUT, LONG_BINPUT, MEMOIZE
                b'q' => {
                    let i = self.u8()?;
                    self.memo_put(i.into(), "BINPUT")?;
                }
                b'r' => {
                    let i = self.u32()?;
                    self.memo_put(i.into(), "LONG_BINPUT")?;
                }
                0x94 => {
                    let i = self.memo_len();
                    self.memo_put(i, "MEMOIZE")?;
                }
                // BINGET, LONG_BINGET
                b'h' => {
                    let i = self.u8()?;
                    self.memo_get(i.into())?;
                }
                b'j' => {
                    let i = self.u32()?;
                    self.memo_get(i.into())?;
                }
                // SETITEM, SETITEMS
                b's' => {
                    let kv = self.pop_n(2, "SETITEM")?;
                    let d = self.top("SETITEM")?;
                    self.set_items(d, &kv, "SETITEM")?;
                }
                b'u' => {
                    let kv = self.pop_mark("SETITEMS")?;
                    let d = self.top("SETITEMS")?;
                    self.set_items(d, &kv, "SETITEMS")?;
                }
                // APPEND, APPENDS, ADDITEMS
                b'a' => {
                    let v = self.pop("APPEND")?;
                    let l = self.top("APPEND")?;
                    self.append(l, vec![v], "APPEND")?;
                }
                b'e' | 0x90 => {
                    let name = if op == b'e' { "APPENDS" } else { "ADDITEMS" };
                    let items = self.pop_mark(name)?;
                    let l = self.top(name)?;
                    self.append(l, items, name)?;
                }
                // GLOBAL
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(&module, &name, allowed)?;
                }
                // STACK_GLOBAL
                0x93 => {
                    let name = self.pop("STACK_GLOBAL")?;
                    let module = self.pop("STACK_GLOBAL")?;
                    let (module, name) = (
                        self.str_of(module, "STACK_GLOBAL")?,
                        self.str_of(name, "STACK_GLOBAL")?,
                    );
                    self.global(&module, &name, allowed)?;
                }
                // REDUCE
                b'R' => {
                    let args = self.pop("REDUCE")?;
                    let func = self.pop("REDUCE")?;
                    self.call(func, args, "REDUCE")?;
                }
                // NEWOBJ: cls.__new__(cls, *args), recorded like a call of cls.
                0x81 => {
                    let args = self.pop("NEWOBJ")?;
                    let cls = self.pop("NEWOBJ")?;
                    self.call(cls, args, "NEWOBJ")?;
                }
                // NEWOBJ_EX: keyword arguments are dropped from the record only when empty.
                0x92 => {
                    let kwargs = self.pop("NEWOBJ_EX")?;
                    let args = self.pop("NEWOBJ_EX")?;
                    let cls = self.pop("NEWOBJ_EX")?;
                    if !matches!(self.objects.get(kwargs), Some(Object::Dict(d)) if d.is_empty()) {
                        return Err(self.wrong("NEWOBJ_EX", "keyword arguments are not supported"));
                    }
                    self.call(cls, args, "NEWOBJ_EX")?;
                }
                // BUILD: the state is recorded on calls; dicts (an OrderedDict's `_metadata`
                // attribute) keep their items and drop the attribute state.
                b'b' => {
                    let state = self.pop("BUILD")?;
                    let target = self.top("BUILD")?;
                    match self.objects.get_mut(target) {
                        Some(Object::Call { state: s, .. }) => *s = Some(state),
                        Some(Object::Dict(_)) => {}
                        _ => return Err(self.wrong("BUILD", "the target must be a call result")),
                    }
                }
                // BINPERSID
                b'Q' => {
                    let pid = self.pop("BINPERSID")?;
                    self.push(Object::PersId(pid));
                }
                b'I' => return Err(self.unsupported("INT")),
                b'L' => return Err(self.unsupported("LONG")),
                b'F' => return Err(self.unsupported("FLOAT")),
                b'S' => return Err(self.unsupported("STRING")),
                b'V' => return Err(self.unsupported("UNICODE")),
                b'p' => return Err(self.unsupported("PUT")),
                b'g' => return Err(self.unsupported("GET")),
                b'P' => return Err(self.unsupported("PERSID")),
                b'i' => return Err(self.unsupported("INST")),
                b'o' => return Err(self.unsupported("OBJ")),
                0x82..=0x84 => return Err(self.unsupported("EXTn")),
                0x97 => return Err(self.unsupported("NEXT_BUFFER")),
                0x98 => return Err(self.unsupported("READONLY_BUFFER")),
                _ => {
                    return Err(PickleError::UnknownOpcode {
                        offset: self.at(),
                        opcode: op,
                    })
                }
            }
        }
    }

    fn unsupported(&self, name: &'static str) -> PickleError {
        PickleError::UnsupportedOpcode {
            offset: self.at(),
            name,
        }
    }
}

/// A `LONG1` / `LONG4` payload: little-endian two's complement.
fn long(bytes: &[u8]) -> Object {
    if bytes.len() <= 8 {
        let neg = bytes.last().is_some_and(|&b| b & 0x80 != 0);
        let mut a = [if neg { 0xff } else { 0 }; 8];
        a[..bytes.len()].copy_from_slice(bytes);
        Object::Int(i64::from_le_bytes(a))
    } else {
        Object::BigInt(bytes.to_vec())
    }
}

/// What identifies a dict key for replacement: scalars by value; other keys never compare equal.
#[derive(PartialEq, Eq, Hash)]
enum KeyRepr {
    Int(i64),
    Str(String),
    None,
}

fn key_repr(objects: &[Object], id: ObjId) -> Option<KeyRepr> {
    match objects.get(id)? {
        Object::Int(i) => Some(KeyRepr::Int(*i)),
        // True == 1 as a dict key in Python.
        Object::Bool(b) => Some(KeyRepr::Int(i64::from(*b))),
        Object::Str(s) => Some(KeyRepr::Str(s.clone())),
        Object::None => Some(KeyRepr::None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: &str) -> bool {
        true
    }

    #[test]
    fn a_small_dict_round_trips() {
        // pickle.dumps({'a': 1, 'b': [2.5, 'x']}, protocol=2)
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02]q\x03(G@\x04\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x04eu.";
        let parsed = parse(p, &all).unwrap();
        assert_eq!(parsed.end, p.len());
        let pk = parsed.pickle;
        let Object::Dict(d) = pk.get(pk.root) else {
            panic!()
        };
        assert_eq!(d.len(), 2);
        assert_eq!(pk.get(d[0].1), &Object::Int(1));
        let Object::List(l) = pk.get(d[1].1) else {
            panic!()
        };
        assert_eq!(pk.get(l[0]), &Object::Float(2.5));
        assert_eq!(pk.get(l[1]), &Object::Str("x".into()));
    }

    #[test]
    fn longs_are_twos_complement() {
        assert_eq!(long(&[0xff]), Object::Int(-1));
        assert_eq!(long(&[0x00, 0x01]), Object::Int(256));
        assert_eq!(long(&[]), Object::Int(0));
        assert!(matches!(long(&[1; 10]), Object::BigInt(_)));
    }

    #[test]
    fn globals_outside_the_allow_list_are_refused_by_name() {
        let only = |g: &str| g == "collections.OrderedDict";
        let err = parse(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.", &only).unwrap_err();
        assert_eq!(
            err,
            PickleError::ForbiddenGlobal {
                offset: 2,
                global: "os.system".into()
            }
        );
        // STACK_GLOBAL: module and name from the stack.
        let p = b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93.";
        assert!(matches!(
            parse(p, &only),
            Err(PickleError::ForbiddenGlobal { global, .. }) if global == "builtins.eval"
        ));
        assert!(matches!(
            parse(b"\x80\x04K\x01K\x02\x93.", &only),
            Err(PickleError::WrongType {
                name: "STACK_GLOBAL",
                ..
            })
        ));
    }

    #[test]
    fn an_ordered_dict_is_a_dict_and_repeated_keys_replace_in_place() {
        let only = |g: &str| g == "collections.OrderedDict";
        // OrderedDict() then SETITEMS a=1, b=2, a=3
        let p =
            b"\x80\x02ccollections\nOrderedDict\n)R(\x8c\x01aK\x01\x8c\x01bK\x02\x8c\x01aK\x03u.";
        let pk = parse(p, &only).unwrap().pickle;
        let Object::Dict(d) = pk.get(pk.root) else {
            panic!()
        };
        let items: Vec<_> = d.iter().map(|(k, v)| (pk.get(*k), pk.get(*v))).collect();
        assert_eq!(
            items,
            [
                (&Object::Str("a".into()), &Object::Int(3)),
                (&Object::Str("b".into()), &Object::Int(2))
            ]
        );
    }

    #[test]
    fn refused_opcodes_and_protocols_say_what_they_are() {
        assert!(matches!(
            parse(b"\x80\x06.", &all),
            Err(PickleError::UnsupportedProtocol { version: 6, .. })
        ));
        assert!(matches!(
            parse(b"(i__main__\nX\n.", &all),
            Err(PickleError::UnsupportedOpcode { name: "INST", .. })
        ));
        assert!(matches!(
            parse(b"\x80\x02K\x01a.", &all),
            Err(PickleError::StackUnderflow { name: "APPEND", .. })
        ));
        assert!(matches!(
            parse(b"\x80\x02K\x01K\x02u.", &all),
            Err(PickleError::NoMark {
                name: "SETITEMS",
                ..
            })
        ));
        assert!(matches!(
            parse(b"\x80\x02]K\x01K\x02s.", &all),
            Err(PickleError::WrongType {
                name: "SETITEM",
                ..
            })
        ));
    }

    #[test]
    fn a_long_run_of_setitems_takes_linear_time() {
        // {0: 0, 1: 1, ...} by 200 000 single SETITEMs.
        let mut p = b"\x80\x02}".to_vec();
        for i in 0..200_000u32 {
            p.push(b'J');
            p.extend_from_slice(&i.to_le_bytes());
            p.extend_from_slice(b"N");
            p.push(b's');
        }
        p.push(b'.');
        let pk = parse(&p, &all).unwrap().pickle;
        assert!(matches!(pk.get(pk.root), Object::Dict(d) if d.len() == 200_000));
    }

    #[test]
    fn memo_indices_far_and_near_are_kept_apart_and_memoize_counts_them() {
        // put 1000 (far: few objects yet), put 0, MEMOIZE (index 2), get each.
        let p = b"\x80\x02K\x07r\xe8\x03\x00\x00K\x08q\x00K\x09\x94(j\xe8\x03\x00\x00h\x00h\x02l.";
        let pk = parse(p, &all).unwrap().pickle;
        let Object::List(l) = pk.get(pk.root) else {
            panic!()
        };
        let v: Vec<_> = l.iter().map(|&i| pk.get(i).clone()).collect();
        assert_eq!(v, [Object::Int(7), Object::Int(8), Object::Int(9)]);
    }

    #[test]
    fn a_memo_get_of_a_list_being_built_shares_it() {
        // l = []; l.append(l)
        let p = b"\x80\x02]q\x00h\x00a.";
        let pk = parse(p, &all).unwrap().pickle;
        assert_eq!(pk.get(pk.root), &Object::List(vec![pk.root]));
    }
}
