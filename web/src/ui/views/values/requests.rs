//! What the Values view asks its workers — the base tile of the current layer, a detail tile when
//! the view is finer than the base, exact lanes for the hover and the table — and how their
//! answers are folded back in (bands stacked, stale answers dropped, a crashed worker replaced).

use super::workers::{MapJob, Source as MapSource};
use super::Values;
use crate::model::weightmap::BASE_CELLS;
use crate::ui::jobs::{now, to_ref};
use bitlens_protocol::js::Event as WorkerEvent;
use bitlens_protocol::JobResult;
use bitlens_stats::weightmap::{Layer, Window};
use std::rc::Rc;
use yew::prelude::*;

impl Values {
    /// What the current layer reads (the changes layer: the tensor in both checkpoints).
    pub(super) fn source(&self, ctx: &Context<Self>) -> MapSource {
        let p = ctx.props();
        match (self.layer, &p.pair) {
            (Layer::Changes, Some(pair)) => MapSource {
                file: to_ref(&pair.first.file),
                entry: pair.first.entry.clone(),
                other: Some((to_ref(&pair.second.file), pair.second.entry.clone())),
            },
            _ => MapSource {
                file: to_ref(&p.tensor.file),
                entry: p.tensor.entry.clone(),
                other: None,
            },
        }
    }

    /// Asks the workers for `window` of the current layer.
    pub(super) fn map_request(&mut self, ctx: &Context<Self>, window: Window) -> Option<MapJob> {
        let source = self.source(ctx);
        match self.workers.map(&source, window, self.layer, now()) {
            Ok(job) => Some(job),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// Asks for the base tile of the current layer (dropping the tiles of the previous one),
    /// once the canvas is measured (its blocks are shaped by the fitted view).
    pub(super) fn request_base(&mut self, ctx: &Context<Self>) {
        self.base = None;
        self.detail = None;
        self.asked.detail = None;
        self.error = None;
        let Some(v) = self.viewport else { return };
        let window = v.base_window(BASE_CELLS);
        self.asked.base = self.map_request(ctx, window);
    }

    /// Asks for a detail tile when the view needs one that neither the current detail tile nor
    /// the one asked for covers.
    pub(super) fn request_detail(&mut self, ctx: &Context<Self>) {
        let (Some(v), Some(base)) = (self.viewport, self.base.as_ref()) else {
            return;
        };
        let Some(want) = v.detail_window(&base.window) else {
            return;
        };
        let covers = |w: &Window| {
            w.block_rows == want.block_rows
                && w.block_cols == want.block_cols
                && w.row0 <= want.row0
                && w.col0 <= want.col0
                && w.row0 + w.rows >= want.row0 + want.rows
                && w.col0 + w.cols >= want.col0 + want.cols
        };
        if self.detail.as_ref().is_some_and(|d| covers(&d.window))
            || self
                .asked
                .detail
                .as_ref()
                .is_some_and(|j| covers(&j.window))
        {
            return;
        }
        self.asked.detail = self.map_request(ctx, want);
    }

    /// Asks for lanes `start..start + count` (the hover's, or the table's).
    pub(super) fn request_lanes(&mut self, ctx: &Context<Self>, start: u64, count: u64) -> u32 {
        let p = ctx.props();
        let asked =
            self.workers
                .lanes(to_ref(&p.tensor.file), p.tensor.entry.clone(), start, count);
        asked.unwrap_or_else(|e| {
            self.error = Some(e);
            0
        })
    }

    /// Folds a worker event in.
    pub(super) fn on_worker(&mut self, ctx: &Context<Self>, event: WorkerEvent) -> bool {
        match event {
            WorkerEvent::Done {
                task,
                seconds,
                result: JobResult::WeightMap(tile),
                ..
            } => {
                if let Some(job) = self.asked.base.as_mut().filter(|j| j.owns(task)) {
                    let started = job.started;
                    if let Some(whole) = job.take(task, *tile, seconds) {
                        self.base_worker_ms = Some(job.worker_seconds * 1e3);
                        self.asked.base = None;
                        self.base = Some(Rc::new(whole));
                        self.draw();
                        self.base_ms = Some(now() - started);
                        self.request_detail(ctx);
                    }
                } else if let Some(job) = self.asked.detail.as_mut().filter(|j| j.owns(task)) {
                    let started = job.started;
                    if let Some(whole) = job.take(task, *tile, seconds) {
                        self.asked.detail = None;
                        self.detail = Some(Rc::new(whole));
                        self.draw();
                        self.detail_ms = Some(now() - started);
                    }
                } else {
                    return false;
                }
            }
            WorkerEvent::Done {
                task,
                result: JobResult::Elements(lanes),
                ..
            } => {
                if task == self.asked.hover {
                    if let Some(h) = self.hover.as_mut() {
                        h.element = lanes.into_iter().next();
                    }
                } else if task == self.asked.table {
                    self.table = Some(lanes);
                } else {
                    return false;
                }
            }
            WorkerEvent::Failed { task, message } => {
                if task.is_none() {
                    // A crashed worker does not answer again: the next request starts others.
                    self.workers.crashed();
                }
                self.asked.detail = None;
                self.error = Some(message);
            }
            _ => return false,
        }
        true
    }
}
