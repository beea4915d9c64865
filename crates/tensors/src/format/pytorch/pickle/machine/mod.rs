//! The opcode loop of the restricted unpickler: a stack of object ids, a mark stack and a memo,
//! driven by CPython's opcode table (`Lib/pickletools.py`), without calling anything. The loop
//! (`run`) dispatches each opcode; reading its argument is module `input`'s, the stack, marks and
//! memo module `stack`'s, and what globals, calls and container opcodes build module `build`'s.

mod build;
mod input;
mod stack;

use super::{ObjId, Object, Pickle, PickleError};
use build::KeyRepr;
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

impl Machine<'_> {
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
