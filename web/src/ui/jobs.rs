//! The analysis run: which statistics are missing, the worker tasks that compute them, progress
//! in bytes, and throughput and memory figures for the status line.
//!
//! Planned tasks wait here ([`Jobs::waiting`]) and go to the pool only as workers free up, so a
//! tensor the visitor selects ([`Jobs::plan_row`]) is computed next, ahead of the whole-model
//! tasks queued before it.

use crate::model::checkpoint::{Checkpoint, TensorRow};
use crate::model::compare::Comparison;
use crate::model::plan::{batches, file_batches, task_bytes, Span};
use crate::ui::loader::Source;
use crate::ui::pool::Task;
use bitlens_protocol::js::{Js, Request};
use bitlens_protocol::{EntryPair, FileRef, FlipSpan, StatsSpan, WorkerRequest};
use bitlens_tensors::format::Entry;
use std::collections::{HashMap, HashSet, VecDeque};

/// What a task computes.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskKind {
    /// Statistics of rows of a checkpoint.
    Stats {
        /// Checkpoint id.
        ckpt: u32,
    },
    /// Statistics of one row the visitor selected, planned ahead of the rest.
    Row {
        /// Checkpoint id.
        ckpt: u32,
        /// Row index.
        row: usize,
    },
    /// Flip statistics of pairs of a comparison.
    Flips {
        /// Checkpoint A id.
        a: u32,
        /// Checkpoint B id.
        b: u32,
    },
}

thread_local! {
    /// The last task id given on this page.
    static LAST_TASK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A task id unique on the page: every app instance (several embedded views) hands its tasks to
/// the page's one worker pool, which tells them apart by these ids.
fn next_task_id() -> u32 {
    LAST_TASK.with(|last| {
        let id = last.get().wrapping_add(1).max(1);
        last.set(id);
        id
    })
}

/// Progress and bookkeeping of the current analysis run.
#[derive(Default)]
pub struct Jobs {
    /// Running or queued tasks.
    pub tasks: HashMap<u32, TaskKind>,
    /// Planned tasks not handed to the pool yet, next first.
    pub waiting: VecDeque<Task>,
    /// Tasks handed to the pool and not finished.
    pub in_pool: usize,
    /// Rows `(checkpoint, row)` and pairs `(a, b, pair)` already submitted.
    queued_rows: HashSet<(u32, usize)>,
    queued_pairs: HashSet<(u32, u32, usize)>,
    /// Bytes to read in this run.
    pub total: u64,
    /// Bytes read so far in this run.
    pub done: u64,
    /// `performance.now()` when the run started.
    pub started: f64,
    /// `performance.now()` when the run ended (all tasks done).
    pub finished: Option<f64>,
    /// Largest wasm memory reported by a worker, in bytes.
    pub memory_max: u64,
    /// The run was cancelled by the user.
    pub cancelled: bool,
}

/// A file source as a worker request carries it.
pub fn to_ref(source: &Source) -> FileRef<Js> {
    match source {
        FileRef::Blob(b) => FileRef::Blob(Js(b.clone().into())),
        FileRef::Url(r) => FileRef::Url(r.clone()),
    }
}

/// A row's tensor as the format layer describes it (what `EntryStats` / `EntryFlips` /
/// `RoundtripEntry` carry to a worker).
pub fn entry_of(r: &TensorRow) -> Entry {
    Entry {
        name: r.name.clone(),
        ty: r.ty,
        shape: r.shape.clone(),
        data: r.data.clone(),
    }
}

/// `performance.now()` in milliseconds.
pub fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Records a `performance.mark` (read by the benchmark script).
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

impl Jobs {
    /// True while tasks are queued or running.
    pub fn running(&self) -> bool {
        !self.tasks.is_empty()
    }

    /// Seconds the run took (or has taken so far).
    pub fn seconds(&self) -> f64 {
        (self.finished.unwrap_or_else(now) - self.started) / 1000.0
    }

    fn begin(&mut self, bytes: u64) {
        if self.tasks.is_empty() {
            self.total = 0;
            self.done = 0;
            self.started = now();
            self.finished = None;
            self.cancelled = false;
            mark("bitlens:stats-start");
        }
        self.total += bytes;
    }

    fn add_task(&mut self, kind: TaskKind, request: impl FnOnce(u32) -> Request) -> Task {
        let id = next_task_id();
        self.tasks.insert(id, kind);
        Task {
            id,
            request: request(id),
        }
    }

    /// Tasks for the rows of `c` that have no statistics and are not queued, cut for a pool of
    /// `workers`.
    pub fn plan_stats(&mut self, c: &Checkpoint, sources: &[Source], workers: usize) -> Vec<Task> {
        self.plan_rows(c, sources, workers, |_| true)
    }

    /// Queues the statistics of row `row` of `c` ahead of every waiting task (when it has none and
    /// is not being computed: a row waiting in a batch is planned again, alone, so it comes first).
    pub fn plan_row(&mut self, c: &Checkpoint, sources: &[Source], row: usize, workers: usize) {
        if c.rows.get(row).is_none_or(|r| r.stats.is_some())
            || self
                .tasks
                .values()
                .any(|k| *k == TaskKind::Row { ckpt: c.id, row })
        {
            return;
        }
        self.queued_rows.remove(&(c.id, row));
        for t in self
            .plan_rows(c, sources, workers, |i| i == row)
            .into_iter()
            .rev()
        {
            if let Some(kind) = self.tasks.get_mut(&t.id) {
                *kind = TaskKind::Row { ckpt: c.id, row };
            }
            self.waiting.push_front(t);
        }
    }

    /// Tasks for the rows of `c` that `want`, have no statistics and are not queued, cut for a
    /// pool of `workers` ([`task_bytes`]).
    fn plan_rows(
        &mut self,
        c: &Checkpoint,
        sources: &[Source],
        workers: usize,
        want: impl Fn(usize) -> bool,
    ) -> Vec<Task> {
        let missing: Vec<usize> = (0..c.rows.len())
            .filter(|&i| {
                want(i) && c.rows[i].stats.is_none() && !self.queued_rows.contains(&(c.id, i))
            })
            .collect();
        let mut out = Vec::new();
        let total = missing.iter().map(|&i| c.rows[i].bytes).sum();
        let target = task_bytes(total, workers);
        let span = |i: usize| Span {
            item: i,
            file: c.rows[i].file,
            offset: c.rows[i].offset,
            bytes: c.rows[i].bytes,
        };
        // Tensors whose stored bytes are not one range (deflated, strided): streamed in element
        // order as the CLI does, consecutive ones of a file batched by size as the ranges below
        // (one task per tensor cost a message, a file open and a result each: the page ran a GGUF
        // of small quantized tensors at a tenth of its per-value speed).
        let entries: Vec<Span> = missing
            .iter()
            .filter(|&&i| !c.rows[i].is_stored_range())
            .map(|&i| span(i))
            .collect();
        for batch in file_batches(&entries, target) {
            let bytes: u64 = batch.iter().map(|s| s.bytes).sum();
            self.begin(bytes);
            let entries = batch
                .iter()
                .map(|s| {
                    self.queued_rows.insert((c.id, s.item));
                    (s.item, entry_of(&c.rows[s.item]))
                })
                .collect();
            let file = to_ref(&sources[batch[0].file]);
            out.push(self.add_task(TaskKind::Stats { ckpt: c.id }, |task| {
                WorkerRequest::EntryStats {
                    task,
                    file,
                    entries,
                }
            }));
        }
        // Byte ranges (of a plain dtype or of ggml blocks), in file order: a worker reads a task's
        // ranges front to back through the padding between them. A GGUF's small F32 norms sit
        // between its quantized tensors; batched only when contiguous they were a task each.
        let mut spans: Vec<Span> = missing
            .into_iter()
            .filter(|&i| c.rows[i].is_stored_range())
            .map(span)
            .collect();
        spans.sort_by_key(|s| (s.file, s.offset));
        for batch in file_batches(&spans, target) {
            let bytes: u64 = batch.iter().map(|s| s.bytes).sum();
            self.begin(bytes);
            let mut spans = Vec::with_capacity(batch.len());
            for s in &batch {
                self.queued_rows.insert((c.id, s.item));
                spans.push(StatsSpan {
                    item: s.item,
                    ty: c.rows[s.item].ty,
                    offset: s.offset,
                    bytes: s.bytes,
                });
            }
            let file = to_ref(&sources[batch[0].file]);
            out.push(self.add_task(TaskKind::Stats { ckpt: c.id }, |task| {
                WorkerRequest::Stats { task, file, spans }
            }));
        }
        out
    }

    /// Tasks for the pairs of `cmp` that have no flip statistics and are not queued: pairs of
    /// plain byte ranges of a dtype in batches of [`FlipSpan`]s, any other pair (a deflated `.npz`
    /// member, a PyTorch view, ggml blocks) one task each, streamed in lockstep in element order
    /// as `bitlens diff` does ([`WorkerRequest::EntryFlips`]); batches cut for a pool of `workers`.
    pub fn plan_flips(
        &mut self,
        cmp: &Comparison,
        a: (&Checkpoint, &[Source]),
        b: (&Checkpoint, &[Source]),
        workers: usize,
    ) -> Vec<Task> {
        let todo: Vec<usize> = (0..cmp.pairs.len())
            .filter(|&i| {
                cmp.pairs[i].flips.is_none() && !self.queued_pairs.contains(&(cmp.a, cmp.b, i))
            })
            .collect();
        let rows = |i: usize| {
            let p = &cmp.pairs[i];
            (&a.0.rows[p.a_row], &b.0.rows[p.b_row])
        };
        let mut out = Vec::new();
        for &i in todo.iter().filter(|&&i| {
            let (ra, rb) = rows(i);
            !(ra.is_range() && rb.is_range())
        }) {
            let (ra, rb) = rows(i);
            self.begin(2 * cmp.pairs[i].bytes);
            self.queued_pairs.insert((cmp.a, cmp.b, i));
            let pair = EntryPair {
                item: i,
                a: to_ref(&a.1[ra.file]),
                a_entry: entry_of(ra),
                b: to_ref(&b.1[rb.file]),
                b_entry: entry_of(rb),
            };
            out.push(
                self.add_task(TaskKind::Flips { a: cmp.a, b: cmp.b }, |task| {
                    WorkerRequest::EntryFlips {
                        task,
                        pairs: vec![pair],
                    }
                }),
            );
        }
        let spans: Vec<Span> = todo
            .into_iter()
            .filter(|&i| {
                let (ra, rb) = rows(i);
                ra.is_range() && rb.is_range()
            })
            .map(|i| Span {
                item: i,
                file: 0,
                offset: 0,
                bytes: 2 * cmp.pairs[i].bytes,
            })
            .collect();
        let target = task_bytes(spans.iter().map(|s| s.bytes).sum(), workers);
        for batch in batches(&spans, target) {
            let bytes: u64 = batch.iter().map(|s| s.bytes).sum();
            self.begin(bytes);
            let mut spans = Vec::with_capacity(batch.len());
            for s in &batch {
                self.queued_pairs.insert((cmp.a, cmp.b, s.item));
                let p = &cmp.pairs[s.item];
                let (ra, rb) = rows(s.item);
                spans.push(FlipSpan {
                    item: s.item,
                    dtype: p.dtype,
                    a: to_ref(&a.1[ra.file]),
                    a_offset: ra.offset,
                    b: to_ref(&b.1[rb.file]),
                    b_offset: rb.offset,
                    bytes: p.bytes,
                });
            }
            out.push(
                self.add_task(TaskKind::Flips { a: cmp.a, b: cmp.b }, |task| {
                    WorkerRequest::Flips { task, spans }
                }),
            );
        }
        out
    }

    /// Bytes read; returns nothing.
    pub fn progress(&mut self, bytes: u64) {
        self.done += bytes;
    }

    /// The next task for the pool, while fewer than `workers` are in it.
    pub fn next_for(&mut self, workers: usize) -> Option<Task> {
        if self.in_pool >= workers {
            return None;
        }
        let t = self.waiting.pop_front()?;
        self.in_pool += 1;
        Some(t)
    }

    /// A task ended; returns true when the run is over.
    pub fn task_done(&mut self, task: u32, memory: u64) -> bool {
        if self.tasks.remove(&task).is_some() {
            self.in_pool = self.in_pool.saturating_sub(1);
        }
        self.memory_max = self.memory_max.max(memory);
        if self.tasks.is_empty() && self.finished.is_none() {
            self.finished = Some(now());
            mark("bitlens:stats-end");
            true
        } else {
            false
        }
    }

    /// Forgets every task (after a cancel or a removal).
    pub fn cancel(&mut self) {
        self.tasks.clear();
        self.waiting.clear();
        self.in_pool = 0;
        self.queued_rows.clear();
        self.queued_pairs.clear();
        if self.finished.is_none() {
            self.finished = Some(now());
            self.cancelled = true;
        }
    }
}
