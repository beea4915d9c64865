//! The root component: the app's state, the messages that change it, and the page layout.
//!
//! Flow: files arrive (picker, drop, demo) → [`loader::load`] reads headers only → checkpoints and
//! their tensor tables show at once → [`Jobs`] plans worker tasks for missing statistics (and flip
//! statistics between consecutive checkpoints) → the [`Pool`] runs them and results fill the views.
//! The codec panel ([`codecs`]) has its own state and messages ([`CodecMsg`]); the root hands them
//! on. Each view gets only the parts of the state it shows.

use crate::model::checkpoint::Checkpoint;
use crate::model::compare::{steps, Comparison};
use crate::model::table::{self, SortKey};
use crate::ui::io::demo;
use crate::ui::io::files::{self, Dropped, Picked};
use crate::ui::jobs::{mark, now, Jobs, TaskKind};
use crate::ui::loader::{self, LoadError, Outcome};
use crate::ui::pool::{Pool, PoolEvent};
use crate::ui::views;
use bitlens_protocol::Results;
use codecs::{CodecMsg, CodecPanel, Ctx};
use std::collections::HashMap;
use web_sys::{Blob, DragEvent};
use yew::prelude::*;

pub mod codecs;

/// The views of the main panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// Whole-checkpoint summary.
    Summary,
    /// The tensor table.
    Tensors,
    /// One tensor's charts.
    Detail,
    /// Checkpoint comparison.
    Compare,
    /// Compress checkpoints, decompress snapshots.
    Codecs,
}

/// The app's state besides the codec panel's: the loaded checkpoints, their comparisons, errors,
/// and what is shown.
#[derive(Default)]
pub struct State {
    /// Loaded checkpoints, in compare order.
    pub checkpoints: Vec<Checkpoint>,
    /// The data of each checkpoint's files, by checkpoint id.
    pub blobs: HashMap<u32, Vec<Blob>>,
    /// The shard index file of each sharded checkpoint that came with one, by checkpoint id.
    pub indexes: HashMap<u32, (String, Blob)>,
    /// Consecutive checkpoints compared (`i` vs `i + 1`).
    pub comparisons: Vec<Comparison>,
    /// Files that could not be loaded or analysed.
    pub errors: Vec<LoadError>,
    /// The checkpoint shown in Summary / Tensors / Detail.
    pub active: Option<u32>,
    /// The open view.
    pub tab: Option<Tab>,
    /// Tensor table sort and filter.
    pub table: table::View,
    /// Tensor shown in Detail.
    pub detail: Option<String>,
    /// Comparison shown in Compare (index into `comparisons`).
    pub step: usize,
    /// A load is in progress.
    pub loading: bool,
    /// Files are being dragged over the page.
    pub drag: bool,
    /// Milliseconds from files given to tensor table on the page, for the last load.
    pub table_ms: Option<f64>,
    next_id: u32,
}

impl State {
    /// The active checkpoint.
    pub fn active_checkpoint(&self) -> Option<&Checkpoint> {
        let id = self.active?;
        self.checkpoints.iter().find(|c| c.id == id)
    }

    /// A checkpoint by id.
    pub fn checkpoint(&self, id: u32) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.id == id)
    }

    /// The open tab (Summary by default).
    pub fn tab(&self) -> Tab {
        self.tab.unwrap_or(Tab::Summary)
    }
}

/// Messages of the root component.
pub enum Msg {
    /// Files were given (picker, drop or demo) at `performance.now()` = the `f64`.
    Given(Vec<Picked>, f64),
    /// A drop's entries were walked.
    Dropped(Vec<Dropped>, f64),
    /// Headers were read.
    Loaded(Outcome, f64),
    /// The tensor table was rendered for the load given at the `f64`.
    TableShown(f64),
    /// Load the bundled demo.
    Demo,
    /// Something failed outside any file (demo fetch, drop walk).
    Failed(String),
    /// A worker reported.
    Pool(PoolEvent),
    /// Stop the analysis.
    Cancel,
    /// Restart the analysis of what is missing.
    Resume,
    /// Remove a checkpoint.
    Remove(u32),
    /// Remove every checkpoint.
    Clear,
    /// Show a checkpoint.
    Select(u32),
    /// Open a view.
    Tab(Tab),
    /// Sort the table by a column.
    Sort(SortKey),
    /// Filter the table by name.
    Filter(String),
    /// Open a tensor's detail.
    Detail(String),
    /// Show comparison `i`.
    Step(usize),
    /// Dismiss error `i`.
    Dismiss(usize),
    /// Drag state changed.
    Drag(bool),
    /// A message of the codec panel.
    Codec(CodecMsg),
}

pub use crate::ui::events::{ReportSlot, ViewEvent};

/// TEMP stub of the page helper's props (see the brief's contract).
#[derive(Properties, PartialEq, Clone)]
pub struct AppProps {
    /// URLs to open at start.
    #[prop_or_default]
    pub urls: Option<Vec<String>>,
    /// Tensor to select.
    #[prop_or_default]
    pub tensor: Option<String>,
    /// View.
    #[prop_or_default]
    pub view: Option<String>,
    /// Compact layout.
    #[prop_or_default]
    pub embed: bool,
    /// Whole-model statistics threshold.
    #[prop_or(64_000_000)]
    pub auto_stats: u64,
    /// Write the view state into the page URL.
    #[prop_or(true)]
    pub sync_url: bool,
    /// Send credentials.
    #[prop_or_default]
    pub credentials: bool,
    /// Events for the embed.
    #[prop_or_default]
    pub events: Callback<ViewEvent>,
    /// The inspect report.
    #[prop_or_default]
    pub report: Option<ReportSlot>,
}

/// TEMP stub: the report of the loaded checkpoints.
fn report_of(checkpoints: &[Checkpoint]) -> bitlens_protocol::inspect::InspectReport {
    use bitlens_protocol::inspect::{FileReport, InspectReport};
    let mut files = Vec::new();
    for c in checkpoints {
        for (fi, f) in c.files.iter().enumerate() {
            let mut rows = c.rows.iter().filter(|r| r.file == fi);
            files.push(FileReport::new(f.path.clone(), &f.header, |_| {
                rows.next().and_then(|r| r.stats.as_deref().cloned())
            }));
        }
    }
    InspectReport::new(files)
}

/// The root component.
pub struct App {
    state: State,
    codecs: CodecPanel,
    jobs: Jobs,
    pool: Pool,
    pending_table: Option<f64>,
}

impl App {
    /// The codec panel with what it reads of the app.
    fn codecs(&mut self) -> (&mut CodecPanel, Ctx<'_>) {
        let s = &mut self.state;
        let ctx = Ctx {
            checkpoints: &s.checkpoints,
            blobs: &s.blobs,
            indexes: &s.indexes,
            active: s.active,
            errors: &mut s.errors,
        };
        (&mut self.codecs, ctx)
    }

    fn rebuild_comparisons(&mut self) {
        let ids: Vec<u32> = self.state.checkpoints.iter().map(|c| c.id).collect();
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

    /// Plans and submits tasks for every missing statistic.
    fn schedule(&mut self) {
        let mut tasks = Vec::new();
        for c in &self.state.checkpoints {
            if let Some(blobs) = self.state.blobs.get(&c.id) {
                tasks.extend(self.jobs.plan_stats(c, blobs));
            }
        }
        for cmp in &self.state.comparisons {
            let (Some(a), Some(b)) = (self.state.checkpoint(cmp.a), self.state.checkpoint(cmp.b))
            else {
                continue;
            };
            let (Some(ba), Some(bb)) = (self.state.blobs.get(&a.id), self.state.blobs.get(&b.id))
            else {
                continue;
            };
            tasks.extend(self.jobs.plan_flips(cmp, (a, ba), (b, bb)));
        }
        for t in tasks {
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

    fn apply_results(&mut self, task: u32, results: Results) {
        let Some(kind) = self.jobs.tasks.get(&task).cloned() else {
            return;
        };
        match (kind, results) {
            (TaskKind::Stats { ckpt }, Results::Stats(results)) => {
                let Some(c) = self.state.checkpoints.iter_mut().find(|c| c.id == ckpt) else {
                    return;
                };
                for (item, s) in results {
                    c.set_stats(item, s);
                }
            }
            (TaskKind::Flips { a, b }, Results::Flips(results)) => {
                let Some(cmp) = self
                    .state
                    .comparisons
                    .iter_mut()
                    .find(|c| c.a == a && c.b == b)
                else {
                    return;
                };
                for (item, f) in results {
                    cmp.set_flips(item, f);
                }
            }
            (_, results) if results.is_empty() => {}
            _ => self.state.errors.push(LoadError {
                file: self.task_file(Some(task)),
                reason: "the worker sent results of another kind of task".into(),
            }),
        }
    }

    fn task_file(&self, task: Option<u32>) -> String {
        match task.and_then(|t| self.jobs.tasks.get(&t)) {
            Some(TaskKind::Stats { ckpt }) => self
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

    fn on_pool(&mut self, event: PoolEvent) {
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
            }
        }
    }

    fn on_loaded(&mut self, outcome: Outcome, given: f64) {
        self.state.loading = false;
        self.state.errors.extend(outcome.errors);
        let (panel, mut ctx) = self.codecs();
        let snapshots = panel.open(outcome.snapshots, outcome.snapshot_indexes, &mut ctx);
        if snapshots && (self.state.tab.is_none() || self.state.checkpoints.is_empty()) {
            self.state.tab = Some(Tab::Codecs);
        }
        let first_new = outcome.loaded.first().map(|l| l.checkpoint.id);
        for l in outcome.loaded {
            self.state.next_id = self.state.next_id.max(l.checkpoint.id + 1);
            self.state.blobs.insert(l.checkpoint.id, l.blobs);
            if let Some(index) = l.index {
                self.state.indexes.insert(l.checkpoint.id, index);
            }
            self.state.checkpoints.push(l.checkpoint);
        }
        crate::model::checkpoint::relabel(&mut self.state.checkpoints);
        if let Some(id) = first_new {
            if self.state.active.is_none() {
                self.state.active = Some(id);
            }
            if self.state.tab.is_none() {
                self.state.tab = Some(Tab::Tensors);
            }
            self.pending_table = Some(given);
        }
        self.rebuild_comparisons();
        self.schedule();
    }
}

impl Component for App {
    type Message = Msg;
    type Properties = AppProps;

    fn create(ctx: &Context<Self>) -> Self {
        App {
            state: State {
                next_id: 1,
                ..State::default()
            },
            codecs: CodecPanel::new(ctx.link().callback(|e| Msg::Codec(CodecMsg::Worker(e)))),
            jobs: Jobs::default(),
            pool: Pool::new(ctx.link().callback(Msg::Pool)),
            pending_table: None,
        }
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Given(picked, given) => {
                if picked.is_empty() {
                    return false;
                }
                self.state.loading = true;
                let first_id = self.state.next_id;
                // Reserve ids so two overlapping loads never share one.
                self.state.next_id += picked.len() as u32;
                ctx.link().send_future(async move {
                    Msg::Loaded(loader::load(picked, first_id).await, given)
                });
            }
            Msg::Dropped(items, given) => {
                ctx.link().send_future(async move {
                    match files::walk(items).await {
                        Ok(picked) => Msg::Given(picked, given),
                        Err(e) => Msg::Failed(format!(
                            "could not read the dropped items: {}",
                            crate::ui::io::blob::js_error_text(&e)
                        )),
                    }
                });
            }
            Msg::Loaded(outcome, given) => self.on_loaded(outcome, given),
            Msg::TableShown(ms) => self.state.table_ms = Some(ms),
            Msg::Demo => {
                self.state.loading = true;
                let given = now();
                ctx.link().send_future(async move {
                    match demo::fetch().await {
                        Ok(picked) => Msg::Given(picked, given),
                        Err(e) => Msg::Failed(format!("demo: {e}")),
                    }
                });
            }
            Msg::Failed(reason) => {
                self.state.loading = false;
                self.state.errors.push(LoadError {
                    file: "input".into(),
                    reason,
                });
            }
            Msg::Pool(event) => self.on_pool(event),
            Msg::Cancel => {
                self.pool.cancel();
                self.jobs.cancel();
            }
            Msg::Resume => self.schedule(),
            Msg::Remove(id) => {
                let was_running = self.jobs.running();
                self.pool.cancel();
                self.jobs.cancel();
                self.state.checkpoints.retain(|c| c.id != id);
                crate::model::checkpoint::relabel(&mut self.state.checkpoints);
                self.state.blobs.remove(&id);
                self.codecs.forget(id);
                self.state.indexes.remove(&id);
                if self.state.active == Some(id) {
                    self.state.active = self.state.checkpoints.first().map(|c| c.id);
                }
                self.rebuild_comparisons();
                if was_running {
                    self.schedule();
                }
            }
            Msg::Clear => {
                self.pool.cancel();
                self.jobs = Jobs::default();
                self.state.checkpoints.clear();
                self.state.blobs.clear();
                self.state.comparisons.clear();
                self.state.active = None;
                self.state.detail = None;
                self.state.tab = None;
                self.codecs.clear();
                self.state.indexes.clear();
            }
            Msg::Select(id) => self.state.active = Some(id),
            Msg::Tab(t) => {
                self.state.tab = Some(t);
                if t == Tab::Codecs {
                    let (panel, mut ctx) = self.codecs();
                    panel.warm(&mut ctx);
                }
            }
            Msg::Sort(k) => self.state.table.click(k),
            Msg::Filter(f) => self.state.table.filter = f,
            Msg::Detail(name) => {
                self.state.detail = Some(name);
                self.state.tab = Some(Tab::Detail);
            }
            Msg::Step(i) => self.state.step = i,
            Msg::Dismiss(i) => {
                if i < self.state.errors.len() {
                    self.state.errors.remove(i);
                }
            }
            Msg::Drag(on) => {
                if self.state.drag == on {
                    return false;
                }
                self.state.drag = on;
            }
            Msg::Codec(msg) => {
                let (panel, ctx) = self.codecs();
                return panel.update(msg, ctx);
            }
        }
        true
    }

    fn rendered(&mut self, ctx: &Context<Self>, first: bool) {
        if let Some(slot) = &ctx.props().report {
            *slot.0.borrow_mut() = Some(report_of(&self.state.checkpoints));
        }
        if first {
            for url in ctx.props().urls.iter().flatten() {
                ctx.props().events.emit(ViewEvent::Error {
                    url: Some(url.clone()),
                    message: "remote loading is the page helper's (TEMP stub)".into(),
                });
            }
        }
        if let Some(given) = self.pending_table.take() {
            mark("bitlens:table-visible");
            ctx.link().send_message(Msg::TableShown(now() - given));
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let ondragover = link.callback(|e: DragEvent| {
            e.prevent_default();
            Msg::Drag(true)
        });
        let ondragleave = link.callback(|e: DragEvent| {
            // Only leaving the window counts (not moving between children).
            Msg::Drag(e.related_target().is_some())
        });
        let link2 = link.clone();
        let ondrop = Callback::from(move |e: DragEvent| {
            e.prevent_default();
            let given = now();
            mark("bitlens:files-given");
            link2.send_message(Msg::Drag(false));
            link2.send_message(Msg::Dropped(files::take_drop(&e), given));
        });
        let s = &self.state;
        let codecs = &self.codecs.state;
        let active = s.active_checkpoint();
        let on_codec = link.callback(Msg::Codec);
        let has_content = !s.checkpoints.is_empty() || !codecs.snapshots.is_empty();
        html! {
            <div class={classes!("app", s.drag.then_some("dragging"))}
                 {ondragover} {ondragleave} {ondrop}>
                { views::chrome::header(link, s.loading, has_content) }
                { views::chrome::errors(link, &s.errors) }
                { views::chrome::progress(link, s.loading, s.table_ms, &self.jobs, self.pool.size()) }
                if !has_content {
                    { views::chrome::welcome(link, s.loading) }
                } else {
                    { views::chrome::checkpoints(link, &s.checkpoints, s.active) }
                    { views::chrome::tabs(link, s.tab(), s.checkpoints.len()) }
                    <main class="panel">
                        { match s.tab() {
                            Tab::Summary => views::summary::view(active),
                            Tab::Tensors => views::table::view(link, &views::table::Props {
                                checkpoint: active,
                                table: &s.table,
                                compressed: active.and_then(|c| codecs.compressed.get(&c.id)),
                            }),
                            Tab::Detail => views::detail::view(link, &on_codec, &views::detail::Props {
                                checkpoint: active,
                                detail: s.detail.as_deref(),
                                codecs,
                            }),
                            Tab::Compare => views::compare::view(link, &views::compare::Props {
                                checkpoints: &s.checkpoints,
                                comparisons: &s.comparisons,
                                step: s.step,
                            }),
                            Tab::Codecs => views::codecs::view(&on_codec, &views::codecs::Props::new(
                                &s.checkpoints,
                                active,
                                codecs,
                            )),
                        } }
                    </main>
                }
                if s.drag {
                    <div class="drop-overlay">{ "Drop .safetensors files, an index.json with its shards, or folders" }</div>
                }
            </div>
        }
    }
}
