//! The machine's state: the object arena, the stack of object ids and its marks, and the memo
//! (near indices in a vector, far ones in a map, so its size follows the objects made).

use super::{Machine, R};
use crate::format::pytorch::pickle::{ObjId, Object, PickleError};

impl Machine<'_> {
    pub(super) fn new_obj(&mut self, o: Object) -> ObjId {
        self.objects.push(o);
        self.objects.len() - 1
    }

    pub(super) fn push(&mut self, o: Object) {
        let id = self.new_obj(o);
        self.stack.push(id);
    }

    /// The lowest stack index the current opcode may pop (above the last mark).
    pub(super) fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    pub(super) fn pop(&mut self, name: &'static str) -> R<ObjId> {
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

    pub(super) fn top(&self, name: &'static str) -> R<ObjId> {
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
    pub(super) fn pop_mark(&mut self, name: &'static str) -> R<Vec<ObjId>> {
        let Some(mark) = self.marks.pop() else {
            return Err(PickleError::NoMark {
                offset: self.at(),
                name,
            });
        };
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    pub(super) fn pop_n(&mut self, n: usize, name: &'static str) -> R<Vec<ObjId>> {
        if self.stack.len() < self.floor() + n {
            return Err(PickleError::StackUnderflow {
                offset: self.at(),
                name,
            });
        }
        Ok(self.stack.split_off(self.stack.len() - n))
    }

    pub(super) fn memo_put(&mut self, index: u64, name: &'static str) -> R<()> {
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
    pub(super) fn memo_len(&self) -> u64 {
        (self.memo_count + self.memo_far.len()) as u64
    }

    pub(super) fn memo_get(&mut self, index: u64) -> R<()> {
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
}
