//! What opcodes build: globals checked against the allow-list, recorded calls (`OrderedDict()`
//! made a dict), dict items set as Python sets them (a repeated key keeps its place) and list or
//! set appends.

use super::{Machine, R};
use crate::format::pytorch::pickle::{ObjId, Object, PickleError};

impl Machine<'_> {
    pub(super) fn wrong(&self, name: &'static str, expected: &'static str) -> PickleError {
        PickleError::WrongType {
            offset: self.at(),
            name,
            expected,
        }
    }

    pub(super) fn global(
        &mut self,
        module: &str,
        name: &str,
        allowed: &dyn Fn(&str) -> bool,
    ) -> R<()> {
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

    pub(super) fn str_of(&self, id: ObjId, name: &'static str) -> R<String> {
        match self.objects.get(id) {
            Some(Object::Str(s)) => Ok(s.clone()),
            _ => Err(self.wrong(name, "module and name must be strings")),
        }
    }

    /// `func(*args)` recorded: an `OrderedDict()` becomes a dict (so `SETITEMS` can fill it),
    /// anything else a [`Object::Call`].
    pub(super) fn call(&mut self, func: ObjId, args: ObjId, name: &'static str) -> R<()> {
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
    pub(super) fn set_items(&mut self, target: ObjId, kv: &[ObjId], name: &'static str) -> R<()> {
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

    pub(super) fn append(&mut self, target: ObjId, items: Vec<ObjId>, name: &'static str) -> R<()> {
        match self.objects.get_mut(target) {
            Some(Object::List(l) | Object::Set(l)) => {
                l.extend(items);
                Ok(())
            }
            _ => Err(self.wrong(name, "the target must be a list or set")),
        }
    }
}

/// What identifies a dict key for replacement: scalars by value; other keys never compare equal.
#[derive(PartialEq, Eq, Hash)]
pub(super) enum KeyRepr {
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
