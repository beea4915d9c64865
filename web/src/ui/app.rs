//! The root component: the app's state, the messages that change it, and the page layout.
//!
//! Flow: files arrive (picker, drop, demo) or URLs (`?url=`, the URL box, the [`AppProps`] of an
//! embed) → [`loader::load`] / [`loader::load_urls`] read headers only → checkpoints and their
//! tensor tables show at once → [`Jobs`] plans worker tasks for missing statistics (and flip
//! statistics between consecutive checkpoints) → the [`Pool`] runs them and results fill the views.
//! Remote checkpoints larger than [`AppProps::auto_stats`] wait for the visitor before whole-model
//! statistics; a selected tensor's statistics never wait (planned ahead of the queue).
//! The codec panel ([`codecs`]) has its own state and messages ([`CodecMsg`]); the root hands them
//! on. Each view gets only the parts of the state it shows. The view state (checkpoint URLs, tab,
//! tensor) is written into the page URL ([`link`]) so a copied link reproduces the view.

use crate::model::checkpoint::Checkpoint;
use crate::model::compare::{steps, Comparison};
use crate::model::link::file_name;
use crate::model::table::{self, SortKey};
use crate::ui::events::{ReportSlot, ViewEvent};
use crate::ui::io::files::{self, Dropped, Picked};
use crate::ui::io::{demo, remote};
use crate::ui::jobs::{mark, now, Jobs, TaskKind};
use crate::ui::loader::{self, LoadError, Outcome, Source};
use crate::ui::pool::{Pool, PoolEvent};
use crate::ui::views;
use bitlens_protocol::{FileRef, Results};
use codecs::{CodecMsg, CodecPanel, Ctx};
use std::collections::{HashMap, HashSet};
use web_sys::{Blob, DragEvent};
use yew::prelude::*;

pub mod codecs;

/// What the app is mounted with: the app reads its URL, an embed sets them from attributes.
#[derive(Properties, PartialEq, Clone)]
pub struct AppProps {
    /// URLs to open at start (several = checkpoints to compare). None: the app reads `?url=`.
    #[prop_or_default]
    pub urls: Option<Vec<String>>,
    /// Tensor to select (Detail) once loaded; live: changing it selects that tensor.
    #[prop_or_default]
    pub tensor: Option<String>,
    /// View: "summary" | "table" | "detail" | "compare" (| "codecs"); live.
    #[prop_or_default]
    pub view: Option<String>,
    /// Compact layout without the app chrome (embed, or `?embed=1`).
    #[prop_or_default]
    pub embed: bool,
    /// Remote checkpoints larger than this many bytes wait for the visitor before whole-model
    /// statistics (the table and a selected tensor's stats never wait). Default 64 MB.
    #[prop_or(64_000_000)]
    pub auto_stats: u64,
    /// Write the view state into the page URL (`history.replaceState`); the app: true; embeds: false.
    #[prop_or(true)]
    pub sync_url: bool,
    /// Send credentials (cookies) with remote requests (embed attribute `credentials`).
    #[prop_or_default]
    pub credentials: bool,
    /// Events for the embed: Load / Select / Error (see `crate::ui::events::ViewEvent`).
    #[prop_or_default]
    pub events: Callback<ViewEvent>,
    /// Filled by the app after each change with what `inspect()` reports (see below).
    #[prop_or_default]
    pub report: Option<ReportSlot>,
}

impl Default for AppProps {
    /// The app's own props: everything from the page URL, the defaults above.
    fn default() -> Self {
        yew::props!(AppProps {})
    }
}

/// The views of the main panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl Tab {
    /// The tab a link or a `view` attribute names (`tensors` and `table` are the same).
    pub fn from_name(name: &str) -> Option<Tab> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "summary" => Tab::Summary,
            "tensors" | "table" => Tab::Tensors,
            "detail" => Tab::Detail,
            "compare" => Tab::Compare,
            "codecs" => Tab::Codecs,
            _ => return None,
        })
    }

    /// Its name in links (`?tab=`).
    pub fn name(self) -> &'static str {
        match self {
            Tab::Summary => "summary",
            Tab::Tensors => "tensors",
            Tab::Detail => "detail",
            Tab::Compare => "compare",
            Tab::Codecs => "codecs",
        }
    }
}

/// The app's state besides the codec panel's: the loaded checkpoints, their comparisons, errors,
/// and what is shown.
#[derive(Default)]
pub struct State {
    /// Loaded checkpoints, in compare order.
    pub checkpoints: Vec<Checkpoint>,
    /// Where each checkpoint's files are (`Blob`s or URLs), by checkpoint id.
    pub sources: HashMap<u32, Vec<Source>>,
    /// The `Blob`s of the local checkpoints' files, by checkpoint id (what the codec panel reads).
    pub blobs: HashMap<u32, Vec<Blob>>,
    /// The URL each remote checkpoint was opened from, by checkpoint id.
    pub urls: HashMap<u32, String>,
    /// URLs asked for that gave no checkpoint (snapshots, failures): kept in the page link.
    pub other_urls: Vec<String>,
    /// Remote checkpoints whose whole-model statistics the visitor asked for.
    pub allowed: HashSet<u32>,
    /// URLs whose server ignores `Range`, small enough to be read whole if the visitor asks.
    pub offers: Vec<String>,
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

    /// True when a file of checkpoint `id` is remote.
    pub fn is_remote(&self, id: u32) -> bool {
        self.sources
            .get(&id)
            .is_some_and(|s| s.iter().any(|f| matches!(f, FileRef::Url(_))))
    }

    /// Where a file is: its URL when remote, else its path as given.
    pub fn location(&self, c: &Checkpoint, file: usize) -> String {
        match self.sources.get(&c.id).and_then(|s| s.get(file)) {
            Some(FileRef::Url(r)) => r.url.clone(),
            _ => c
                .files
                .get(file)
                .map_or_else(String::new, |f| f.path.clone()),
        }
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
    /// Open URLs (the URL box, `?url=`, an embed's `src`).
    OpenUrls(Vec<String>),
    /// Read a small file whole whose server ignores `Range` (the visitor asked).
    DownloadWhole(String),
    /// Compute the whole-model statistics of a large remote checkpoint (the visitor asked).
    AllowStats(u32),
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

/// The root component.
pub struct App {
    state: State,
    codecs: CodecPanel,
    jobs: Jobs,
    pool: Pool,
    pending_table: Option<f64>,
    /// Compact layout (the `embed` prop, or `?embed=1`).
    embed: bool,
    /// A tensor to select once it is loaded (`?tensor=`, the `tensor` prop).
    want_tensor: Option<String>,
    /// Errors already sent as [`ViewEvent::Error`].
    errors_told: usize,
    /// What the report slot was last filled from: (checkpoints, tensors with statistics).
    reported: Option<(Vec<u32>, usize)>,
    /// The view state last written into the page URL (written again only when it changes: the
    /// browser throttles `replaceState`).
    linked: Option<crate::model::link::ViewState>,
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

    /// True when checkpoint `c` is remote, larger than `auto_stats`, and the visitor has not asked
    /// for its whole-model statistics yet.
    fn waits(&self, c: &Checkpoint, auto_stats: u64) -> bool {
        self.state.is_remote(c.id)
            && c.file_bytes() > auto_stats
            && !self.state.allowed.contains(&c.id)
    }

    /// Plans tasks for every missing statistic (but the whole-model statistics of checkpoints that
    /// wait for the visitor), the shown tensor's first, and hands the pool what it can take.
    fn schedule(&mut self, auto_stats: u64) {
        for c in &self.state.checkpoints {
            if self.waits(c, auto_stats) {
                continue;
            }
            if let Some(sources) = self.state.sources.get(&c.id) {
                let tasks = self.jobs.plan_stats(c, sources);
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
            let tasks = self.jobs.plan_flips(cmp, (a, sa), (b, sb));
            self.jobs.waiting.extend(tasks);
        }
        self.schedule_shown();
    }

    /// Plans the statistics of the tensor Detail shows (of the active checkpoint) ahead of the
    /// rest, and feeds the pool.
    fn schedule_shown(&mut self) {
        if self.state.tab() == Tab::Detail {
            if let Some(c) = self.state.active_checkpoint() {
                let row = c.detail_row(self.state.detail.as_deref());
                if let (Some(row), Some(sources)) = (row, self.state.sources.get(&c.id)) {
                    self.jobs.plan_row(c, sources, row);
                }
            }
        }
        self.feed();
    }

    /// Hands the pool waiting tasks while it has free workers.
    fn feed(&mut self) {
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

    fn apply_results(&mut self, task: u32, results: Results) {
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
                self.feed();
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

    fn on_loaded(&mut self, outcome: Outcome, given: f64, props: &AppProps) {
        // A tab asked for (`?tab=`, the `view` prop, or the visitor's) is kept.
        let tab_given = self.state.tab.is_some();
        self.state.loading = false;
        self.state.errors.extend(outcome.errors);
        self.state.offers.extend(outcome.offers);
        let (panel, mut ctx) = self.codecs();
        let mut snapshots = panel.open(outcome.snapshots, outcome.snapshot_indexes, &mut ctx);
        for (name, file) in outcome.remote_snapshots {
            let (panel, mut ctx) = self.codecs();
            panel.open_remote(name, file, &mut ctx);
            snapshots = true;
        }
        if snapshots && (self.state.tab.is_none() || self.state.checkpoints.is_empty()) {
            self.state.tab = Some(Tab::Codecs);
        }
        let first_new = outcome.loaded.first().map(|l| l.checkpoint.id);
        for l in outcome.loaded {
            let id = l.checkpoint.id;
            self.state.next_id = self.state.next_id.max(id + 1);
            let blobs: Vec<Blob> = l
                .sources
                .iter()
                .filter_map(|s| match s {
                    FileRef::Blob(b) => Some(b.clone()),
                    FileRef::Url(_) => None,
                })
                .collect();
            if blobs.len() == l.sources.len() {
                self.state.blobs.insert(id, blobs);
            }
            self.state.sources.insert(id, l.sources);
            if let Some(url) = l.url {
                self.state.other_urls.retain(|u| *u != url);
                self.state.urls.insert(id, url);
            }
            if let Some(index) = l.index {
                self.state.indexes.insert(id, index);
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
        if let Some(name) = self.want_tensor.clone() {
            if self
                .state
                .active_checkpoint()
                .and_then(|c| c.row_by_name(&name))
                .is_some()
            {
                self.want_tensor = None;
                self.select(name, props);
                if !tab_given {
                    self.state.tab = Some(Tab::Detail);
                }
            }
        }
        self.rebuild_comparisons();
        self.schedule(props.auto_stats);
    }

    /// Selects tensor `name` for Detail: its statistics come next; the host hears of it.
    fn select(&mut self, name: String, props: &AppProps) {
        if self.state.detail.as_deref() != Some(name.as_str()) {
            props.events.emit(ViewEvent::Select {
                tensor: name.clone(),
            });
        }
        self.state.detail = Some(name);
    }

    /// Starts loading `urls` as checkpoints (appended in that order).
    fn open_urls(&mut self, ctx: &Context<Self>, urls: Vec<String>) {
        let urls: Vec<String> = urls
            .into_iter()
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return;
        }
        mark("bitlens:files-given");
        let given = now();
        self.state.loading = true;
        for u in &urls {
            if !self.state.other_urls.contains(u) {
                self.state.other_urls.push(u.clone());
            }
        }
        let first_id = self.state.next_id;
        self.state.next_id += urls.len() as u32;
        let credentials = ctx.props().credentials;
        ctx.link().send_future(async move {
            Msg::Loaded(loader::load_urls(urls, first_id, credentials).await, given)
        });
    }

    /// Forgets every checkpoint, snapshot and task.
    fn clear(&mut self) {
        self.pool.cancel();
        self.jobs = Jobs::default();
        self.state.checkpoints.clear();
        self.state.sources.clear();
        self.state.blobs.clear();
        self.state.urls.clear();
        self.state.other_urls.clear();
        self.state.allowed.clear();
        self.state.comparisons.clear();
        self.state.active = None;
        self.state.detail = None;
        self.state.tab = None;
        self.codecs.clear();
        self.state.indexes.clear();
    }

    /// The view state a link reproduces: the URLs of the remote checkpoints (in compare order, then
    /// those that gave none), the tab, the tensor.
    fn view_state(&self) -> crate::model::link::ViewState {
        let s = &self.state;
        let mut urls: Vec<String> = s
            .checkpoints
            .iter()
            .filter_map(|c| s.urls.get(&c.id).cloned())
            .collect();
        urls.extend(s.other_urls.iter().cloned());
        crate::model::link::ViewState {
            urls,
            tab: s.tab.map(|t| t.name().to_owned()),
            tensor: s.detail.clone(),
            embed: self.embed,
        }
    }

    /// The codecs work on local files only: refuses a codec job on a remote checkpoint, saying so.
    fn refuse_remote_codecs(&mut self, msg: &CodecMsg) -> bool {
        let ckpt = match msg {
            CodecMsg::Compress | CodecMsg::CompareCodecs(_) => self.state.active,
            CodecMsg::SetBase(b) | CodecMsg::SnapshotBase(_, b) => *b,
            _ => None,
        };
        let Some(c) = ckpt.filter(|&id| self.state.is_remote(id)) else {
            return false;
        };
        let name = self
            .state
            .checkpoint(c)
            .map_or_else(String::new, |c| c.name.clone());
        self.state.errors.push(LoadError {
            file: self.state.urls.get(&c).cloned().unwrap_or(name),
            reason: "this checkpoint is remote: the codecs work on local files, so download the \
                     file first and open it here"
                .into(),
        });
        true
    }

    /// Tells the host about new errors, the loaded tables, and fills the report slot.
    fn tell_host(&mut self, props: &AppProps) {
        for e in &self.state.errors[self.errors_told.min(self.state.errors.len())..] {
            let url = bitlens_remote::is_url(&e.file)
                .unwrap_or(false)
                .then(|| e.file.clone());
            props.events.emit(ViewEvent::Error {
                url,
                message: format!("{}: {}", e.file, e.reason),
            });
        }
        self.errors_told = self.state.errors.len();
        if let Some(slot) = &props.report {
            let s = &self.state;
            let key = (
                s.checkpoints.iter().map(|c| c.id).collect::<Vec<_>>(),
                s.checkpoints.iter().map(|c| c.done).sum::<usize>(),
            );
            if self.reported.as_ref() != Some(&key) {
                let report = crate::model::report::report(&s.checkpoints, |c, f| s.location(c, f));
                *slot.0.borrow_mut() = Some(report);
                self.reported = Some(key);
            }
        }
    }
}

impl Component for App {
    type Message = Msg;
    type Properties = AppProps;

    fn create(ctx: &Context<Self>) -> Self {
        let props = ctx.props();
        // The app reads its own URL; an embed gives its URLs as props.
        let from_page = props
            .urls
            .is_none()
            .then(crate::ui::io::location::read)
            .unwrap_or_default();
        let mut app = App {
            state: State {
                next_id: 1,
                tab: props
                    .view
                    .as_deref()
                    .or(from_page.tab.as_deref())
                    .and_then(Tab::from_name),
                ..State::default()
            },
            codecs: CodecPanel::new(ctx.link().callback(|e| Msg::Codec(CodecMsg::Worker(e)))),
            jobs: Jobs::default(),
            pool: Pool::new(ctx.link().callback(Msg::Pool)),
            pending_table: None,
            embed: props.embed || from_page.embed,
            want_tensor: props.tensor.clone().or(from_page.tensor),
            errors_told: 0,
            reported: None,
            linked: None,
        };
        let urls = props.urls.clone().unwrap_or(from_page.urls);
        app.open_urls(ctx, urls);
        app
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &AppProps) -> bool {
        let props = ctx.props().clone();
        if props.urls != old.urls {
            self.clear();
            // The new checkpoints open in the asked-for view, on the asked-for tensor.
            self.state.tab = props.view.as_deref().and_then(Tab::from_name);
            self.want_tensor = props.tensor.clone();
            self.open_urls(ctx, props.urls.clone().unwrap_or_default());
        }
        if props.view != old.view {
            if let Some(t) = props.view.as_deref().and_then(Tab::from_name) {
                self.state.tab = Some(t);
            }
        }
        if props.tensor != old.tensor {
            if let Some(name) = props.tensor.clone() {
                let known = self
                    .state
                    .active_checkpoint()
                    .is_some_and(|c| c.row_by_name(&name).is_some());
                if known {
                    self.select(name, &props);
                    if props.view.is_none() {
                        self.state.tab = Some(Tab::Detail);
                    }
                } else {
                    self.want_tensor = Some(name);
                }
            }
        }
        if props.embed != old.embed {
            self.embed = props.embed;
        }
        self.schedule_shown();
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        let props = ctx.props().clone();
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
            Msg::Loaded(outcome, given) => self.on_loaded(outcome, given, &props),
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
            Msg::OpenUrls(urls) => self.open_urls(ctx, urls),
            Msg::DownloadWhole(url) => {
                self.state.offers.retain(|u| *u != url);
                self.state.errors.retain(|e| e.file != url);
                self.errors_told = self.errors_told.min(self.state.errors.len());
                self.state.other_urls.retain(|u| *u != url);
                self.state.loading = true;
                let given = now();
                let credentials = props.credentials;
                ctx.link().send_future(async move {
                    match remote::download(&url, credentials).await {
                        Ok(blob) => Msg::Given(
                            vec![Picked {
                                path: file_name(&url),
                                blob,
                            }],
                            given,
                        ),
                        Err(e) => Msg::Failed(e),
                    }
                });
            }
            Msg::AllowStats(id) => {
                self.state.allowed.insert(id);
                self.schedule(props.auto_stats);
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
            Msg::Resume => self.schedule(props.auto_stats),
            Msg::Remove(id) => {
                let was_running = self.jobs.running();
                self.pool.cancel();
                self.jobs.cancel();
                self.state.checkpoints.retain(|c| c.id != id);
                crate::model::checkpoint::relabel(&mut self.state.checkpoints);
                self.state.sources.remove(&id);
                self.state.blobs.remove(&id);
                self.state.urls.remove(&id);
                self.state.allowed.remove(&id);
                self.codecs.forget(id);
                self.state.indexes.remove(&id);
                if self.state.active == Some(id) {
                    self.state.active = self.state.checkpoints.first().map(|c| c.id);
                }
                self.rebuild_comparisons();
                if was_running {
                    self.schedule(props.auto_stats);
                }
            }
            Msg::Clear => self.clear(),
            Msg::Select(id) => {
                self.state.active = Some(id);
                self.schedule_shown();
            }
            Msg::Tab(t) => {
                self.state.tab = Some(t);
                if t == Tab::Codecs {
                    let (panel, mut ctx) = self.codecs();
                    panel.warm(&mut ctx);
                }
                self.schedule_shown();
            }
            Msg::Sort(k) => self.state.table.click(k),
            Msg::Filter(f) => self.state.table.filter = f,
            Msg::Detail(name) => {
                self.select(name, &props);
                self.state.tab = Some(Tab::Detail);
                self.schedule_shown();
            }
            Msg::Step(i) => self.state.step = i,
            Msg::Dismiss(i) => {
                if i < self.state.errors.len() {
                    self.state.errors.remove(i);
                    if i < self.errors_told {
                        self.errors_told -= 1;
                    }
                }
            }
            Msg::Drag(on) => {
                if self.state.drag == on || self.embed {
                    return false;
                }
                self.state.drag = on;
            }
            Msg::Codec(msg) => {
                if self.refuse_remote_codecs(&msg) {
                    return true;
                }
                let (panel, ctx) = self.codecs();
                return panel.update(msg, ctx);
            }
        }
        true
    }

    fn rendered(&mut self, ctx: &Context<Self>, _first: bool) {
        let props = ctx.props();
        if let Some(given) = self.pending_table.take() {
            mark("bitlens:table-visible");
            ctx.link().send_message(Msg::TableShown(now() - given));
            let s = &self.state;
            props.events.emit(ViewEvent::Load {
                urls: s
                    .checkpoints
                    .iter()
                    .filter_map(|c| s.urls.get(&c.id).cloned())
                    .collect(),
                files: s.checkpoints.iter().map(|c| c.files.len()).sum(),
                tensors: s.checkpoints.iter().map(|c| c.rows.len()).sum(),
            });
        }
        self.tell_host(props);
        if props.sync_url && !self.state.loading {
            let view = self.view_state();
            if self.linked.as_ref() != Some(&view) && crate::ui::io::location::write(&view) {
                self.linked = Some(view);
            }
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let props = ctx.props();
        let embed = self.embed;
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
            if embed {
                return;
            }
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
        // The active checkpoint's wait first, then any other's (a comparison needs both).
        let waiting = active
            .filter(|c| self.waits(c, props.auto_stats))
            .or_else(|| {
                s.checkpoints
                    .iter()
                    .find(|c| self.waits(c, props.auto_stats))
            });
        let local_in_link = props.sync_url
            && !embed
            && s.checkpoints.iter().any(|c| !s.urls.contains_key(&c.id))
            && !s.urls.is_empty();
        html! {
            <div class={classes!("app", s.drag.then_some("dragging"), embed.then_some("embed"))}
                 {ondragover} {ondragleave} {ondrop}>
                if !embed {
                    { views::chrome::header(link, s.loading, has_content) }
                }
                { views::chrome::errors(link, &s.errors, &s.offers) }
                { views::chrome::progress(link, s.loading, s.table_ms, &self.jobs, self.pool.size()) }
                if let Some(c) = waiting {
                    { views::chrome::stats_button(link, c) }
                }
                if local_in_link {
                    <p class="note link-note">{ "The page link reopens only the checkpoints opened by URL; local files are not part of it." }</p>
                }
                if !has_content {
                    if !embed {
                        { views::chrome::welcome(link, s.loading) }
                    } else if s.loading {
                        <p class="note">{ "Loading…" }</p>
                    }
                } else {
                    if !embed || s.checkpoints.len() > 1 {
                        { views::chrome::checkpoints(link, &s.checkpoints, s.active, !embed) }
                    }
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
