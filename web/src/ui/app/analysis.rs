//! The analysis of the root component: comparisons between consecutive checkpoints, planning the
//! missing statistics into worker tasks (a selected tensor first; large remote checkpoints only
//! when the visitor asks; a snapshot's shown tensor decoded by the codec panel), feeding the pool,
//! and folding its results into the state, drawn at most every [`redraw::MIN_MS`] while it runs
//! (and less often when a redraw costs the page's thread more: [`redraw::gap`]).

use super::{App, Msg, Tab};
use crate::model::checkpoint::Checkpoint;
use crate::model::compare::{steps, Comparison};
use crate::model::redraw;
use crate::ui::jobs::now;
use crate::ui::jobs::TaskKind;
use crate::ui::loader::LoadError;
use crate::ui::pool::PoolEvent;
use bitlens_protocol::Results;
use std::time::Duration;
use yew::Context;

/// When the statistics' progress was last drawn, what that cost, and whether a redraw is
/// scheduled.
#[derive(Default)]
pub struct PoolRender {
    /// `performance.now()` of the last redraw for the statistics.
    last: f64,
    /// A [`Msg::PoolRender`] is on its way.
    scheduled: bool,
    /// `performance.now()` when the redraw being drawn started, until [`PoolRender::measure`].
    started: Option<f64>,
    /// Milliseconds the last redraw took, from its start to its layout done.
    cost: f64,
}

impl PoolRender {
    /// Least milliseconds from the last redraw to the next ([`redraw::gap`]).
    fn gap(&self) -> f64 {
        redraw::gap(self.cost)
    }

    /// After a redraw ([`Msg::PoolRendered`]): lays the page out now if the browser has not yet
    /// (reading a size makes it), and keeps the redraw's cost.
    pub fn measure(&mut self) {
        if let Some(t) = self.started.take() {
            let body = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.body());
            if let Some(body) = body {
                body.offset_height();
            }
            self.cost = now() - t;
        }
    }
}

impl App {
    pub(super) fn rebuild_comparisons(&mut self) {
        // Snapshots have no byte ranges to compare: their tensors are decoded one at a time.
        let ids: Vec<u32> = self
            .state
            .checkpoints
            .iter()
            .filter(|c| c.snapshot.is_none())
            .map(|c| c.id)
            .collect();
        let mut old: Vec<Comparison> = std::mem::take(&mut self.state.comparisons);
        for (a, b) in steps(&ids) {
            let cmp = match old.iter().position(|c| c.a == a && c.b == b) {
                Some(i) => old.swap_remove(i),
                None => {
                    let (ca, cb) = (self.state.checkpoint(a), self.state.checkpoint(b));
                    Comparison::new(ca.expect("id exists"), cb.expect("id exists"))
                }
            };
            self.state.comparisons.push(cmp);
        }
        if self.state.step >= self.state.comparisons.len() {
            self.state.step = 0;
        }
    }

    /// True when checkpoint `c` is remote, larger than `auto_stats`, lacks statistics (a matching
    /// sidecar gives them all), and the visitor has not asked for its whole-model statistics yet.
    pub(super) fn waits(&self, c: &Checkpoint, auto_stats: u64) -> bool {
        self.state.is_remote(c.id)
            && !c.complete()
            && c.file_bytes() > auto_stats
            && !self.state.allowed.contains(&c.id)
    }

    /// Plans tasks for every missing statistic (but the whole-model statistics of checkpoints that
    /// wait for the visitor), the shown tensor's first, and hands the pool what it can take.
    pub(super) fn schedule(&mut self, auto_stats: u64) {
        for c in &self.state.checkpoints {
            if self.waits(c, auto_stats) {
                continue;
            }
            if let Some(sources) = self.state.sources.get(&c.id) {
                let tasks = self.jobs.plan_stats(c, sources, self.pool.size());
                self.jobs.waiting.extend(tasks);
            }
        }
        for cmp in &self.state.comparisons {
            let (Some(a), Some(b)) = (self.state.checkpoint(cmp.a), self.state.checkpoint(cmp.b))
            else {
                continue;
            };
            if self.waits(a, auto_stats) || self.waits(b, auto_stats) {
                continue;
            }
            let (Some(sa), Some(sb)) =
                (self.state.sources.get(&a.id), self.state.sources.get(&b.id))
            else {
                continue;
            };
            let tasks = self
                .jobs
                .plan_flips(cmp, (a, sa), (b, sb), self.pool.size());
            self.jobs.waiting.extend(tasks);
        }
        self.schedule_shown();
    }

    /// Plans the statistics of the tensor Detail shows (of the active checkpoint) ahead of the
    /// rest, and feeds the pool.
    pub(super) fn schedule_shown(&mut self) {
        // A selected tensor is computed whatever the view (an embed's `tensor` attribute on a
        // table view too); the Detail view computes the tensor it shows.
        if self.state.tab() == Tab::Detail || self.state.detail.is_some() {
            if let Some(c) = self.state.active_checkpoint() {
                let row = c.detail_row(self.state.detail.as_deref());
                if let (Some(row), Some(sources)) = (row, self.state.sources.get(&c.id)) {
                    self.jobs.plan_row(c, sources, row, self.pool.size());
                }
            }
            // A snapshot's tensor is decoded by the codec panel instead.
            self.decode_shown();
        }
        self.feed();
    }

    /// Hands the pool waiting tasks while it has free workers.
    pub(super) fn feed(&mut self) {
        while let Some(t) = self.jobs.next_for(self.pool.size()) {
            if let Err(e) = self.pool.submit(t) {
                self.state.errors.push(LoadError {
                    file: "worker pool".into(),
                    reason: e,
                });
                self.pool.cancel();
                self.jobs.cancel();
                break;
            }
        }
    }

    pub(super) fn apply_results(&mut self, task: u32, results: Results) {
        let Some(kind) = self.jobs.tasks.get(&task).cloned() else {
            return;
        };
        match (kind, results) {
            (TaskKind::Stats { ckpt } | TaskKind::Row { ckpt, .. }, Results::Stats(results)) => {
                let Some(c) = self.state.checkpoints.iter_mut().find(|c| c.id == ckpt) else {
                    return;
                };
                for (item, s) in results {
                    c.set_stats(item, s);
                }
            }
            (TaskKind::Flips { a, b }, results @ (Results::Flips(_) | Results::Diffs(_))) => {
                let Some(cmp) = self
                    .state
                    .comparisons
                    .iter_mut()
                    .find(|c| c.a == a && c.b == b)
                else {
                    return;
                };
                match results {
                    Results::Flips(v) => v.into_iter().for_each(|(i, f)| cmp.set_flips(i, f)),
                    Results::Diffs(v) => v.into_iter().for_each(|(i, d)| cmp.set_diff(i, d)),
                    Results::Stats(_) => {}
                }
            }
            (_, results) if results.is_empty() => {}
            _ => self.state.errors.push(LoadError {
                file: self.task_file(Some(task)),
                reason: "the worker sent results of another kind of task".into(),
            }),
        }
    }

    pub(super) fn task_file(&self, task: Option<u32>) -> String {
        match task.and_then(|t| self.jobs.tasks.get(&t)) {
            Some(TaskKind::Stats { ckpt } | TaskKind::Row { ckpt, .. }) => self
                .state
                .checkpoint(*ckpt)
                .map_or("checkpoint".into(), |c| c.name.clone()),
            Some(TaskKind::Flips { a, b }) => format!(
                "{} vs {}",
                self.state.checkpoint(*a).map_or("?", |c| c.name.as_str()),
                self.state.checkpoint(*b).map_or("?", |c| c.name.as_str())
            ),
            None => "analysis".into(),
        }
    }

    /// Once the statistics are done, has the weight map's workers started ahead of the Values
    /// view, so opening it does not wait for them (not in an embed: a hub page's element starts
    /// no worker for a view nobody opened; not while Values is open: its map has workers of its
    /// own, and spares would sit idle beside them until the next visit).
    pub(super) fn keep_map_workers_warm(&self) {
        if !self.jobs.running() && !self.embed && self.state.tab != Some(Tab::Values) {
            crate::ui::views::values::prewarm();
        }
    }

    /// The scheduled redraw ([`Msg::PoolRender`]) happens now.
    pub(super) fn on_pool_render(&mut self, ctx: &Context<App>) {
        self.pool_render.scheduled = false;
        self.pool_redraw(now(), ctx);
    }

    /// A statistics redraw starts at `t` (the component renders when this update returns).
    /// [`Msg::PoolRendered`] follows in a task of its own, after the whole render (the rows'
    /// components change after the root's `rendered`), to weigh its cost.
    fn pool_redraw(&mut self, t: f64, ctx: &Context<App>) {
        let r = &mut self.pool_render;
        r.last = t;
        r.started = Some(t);
        ctx.link().send_future(async {
            gloo_timers::future::sleep(Duration::ZERO).await;
            Msg::PoolRendered
        });
    }

    /// True when the statistics' progress should be drawn now: the run ended, or the
    /// [`PoolRender::gap`] passed since it was last drawn. Otherwise a redraw is scheduled for
    /// when they will have passed ([`Msg::PoolRender`]), once.
    pub(super) fn pool_render_due(&mut self, ctx: &Context<App>) -> bool {
        let t = now();
        let gap = self.pool_render.gap();
        if !self.jobs.running() || t - self.pool_render.last >= gap {
            self.pool_redraw(t, ctx);
            return true;
        }
        let r = &mut self.pool_render;
        if !r.scheduled {
            r.scheduled = true;
            let wait = (gap - (t - r.last)).max(0.0) as u64;
            ctx.link().send_future(async move {
                gloo_timers::future::sleep(Duration::from_millis(wait)).await;
                Msg::PoolRender
            });
        }
        false
    }

    pub(super) fn on_pool(&mut self, event: PoolEvent) {
        match event {
            PoolEvent::Update { task, batch } => {
                if self.jobs.tasks.contains_key(&task) {
                    self.jobs.progress(batch.bytes);
                    self.apply_results(task, batch.results);
                }
            }
            PoolEvent::Done {
                worker,
                task,
                batch,
                memory,
            } => {
                if self.pool.running(worker) != Some(task) {
                    return; // a report from a cancelled run
                }
                self.jobs.progress(batch.bytes);
                self.apply_results(task, batch.results);
                self.jobs.task_done(task, memory);
                if let Err(e) = self.pool.finished(worker) {
                    self.state.errors.push(LoadError {
                        file: "worker pool".into(),
                        reason: e,
                    });
                }
                self.feed();
                self.keep_map_workers_warm();
            }
            PoolEvent::Failed {
                worker,
                task,
                message,
            } => {
                let running = self.pool.running(worker);
                if task.is_some() && running != task {
                    return;
                }
                let file = self.task_file(running);
                self.state.errors.push(LoadError {
                    file,
                    reason: message,
                });
                if task.is_none() {
                    // The worker itself died (script or module failed to load): it would never
                    // answer again, so stop the run; Resume starts fresh workers.
                    self.pool.cancel();
                    self.jobs.cancel();
                    return;
                }
                if let Some(t) = running {
                    self.jobs.task_done(t, 0);
                }
                let _ = self.pool.finished(worker);
                self.feed();
            }
        }
    }
}
