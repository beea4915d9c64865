//! The root component: every piece of state, the messages that change it, and the page layout.
//!
//! Flow: files arrive (picker, drop, demo) → [`loader::load`] reads headers only → checkpoints and
//! their tensor tables show at once → [`Jobs`] plans worker tasks for missing statistics (and flip
//! statistics between consecutive checkpoints) → the [`Pool`] runs them and results fill the views.

use crate::model::checkpoint::Checkpoint;
use crate::model::codec::{
    preset_by_id, Compressed, EntryInfo, Preset, RoundtripRow, SnapshotInfo, PRESETS,
};
use crate::model::compare::{steps, Comparison};
use crate::model::table::{self, SortKey};
use crate::ui::codec::{Build, CodecEvent, CodecRunner, Job};
use crate::ui::io::demo;
use crate::ui::io::files::{self, Dropped, Picked};
use crate::ui::jobs::{mark, now, Jobs, TaskKind};
use crate::ui::loader::{self, LoadError, Outcome};
use crate::ui::pool::{Pool, PoolEvent};
use crate::ui::views;
use bitlens_stats::{FlipStats, TensorStats};
use std::collections::{BTreeMap, HashMap};
use web_sys::{Blob, DragEvent, Url};
use yew::prelude::*;

mod codecs;

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

/// A finished download: object URL, file name, size, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// `blob:` URL of the file.
    pub url: String,
    /// Suggested file name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Seconds the worker took.
    pub seconds: f64,
    /// The worker's wasm memory in bytes afterwards.
    pub memory: u64,
}

/// The last compression of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressRun {
    /// One snapshot per file of the checkpoint, in file order.
    pub outputs: Vec<Output>,
    /// The checkpoint's shard index, offered as it is (the CLI copies it next to the snapshots).
    pub index: Option<Output>,
    /// True for a sharded checkpoint (snapshots named `<shard>.bls`).
    pub sharded: bool,
    /// Preset of the whole checkpoint.
    pub preset: &'static Preset,
    /// Name of the base checkpoint, for deltas.
    pub base: Option<String>,
    /// Sizes and entries of all files together.
    pub result: Compressed,
    /// Entry index by tensor name.
    pub by_name: HashMap<String, usize>,
    /// Seconds the worker spent on the whole job.
    pub seconds: f64,
    /// The codec worker's wasm memory in bytes at the end (its high-water mark).
    pub memory: u64,
    /// The build of the module that ran it.
    pub build: Option<Build>,
}

impl CompressRun {
    /// Revokes the object URLs of its downloads.
    pub fn revoke(&self) {
        for o in self.outputs.iter().chain(&self.index) {
            revoke(Some(o));
        }
    }

    /// The entry of a tensor.
    pub fn entry(&self, name: &str) -> Option<&EntryInfo> {
        self.by_name.get(name).map(|&i| &self.result.entries[i])
    }
}

/// A snapshot file opened in the page.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotFile {
    /// Id (unique among snapshots).
    pub id: u32,
    /// File name.
    pub name: String,
    /// Its data.
    pub blob: Blob,
    /// Its index, once read.
    pub info: Option<SnapshotInfo>,
    /// The checkpoint chosen as its base (deltas).
    pub base: Option<u32>,
    /// The decompressed file.
    pub output: Option<Output>,
    /// Why reading or decoding failed.
    pub error: Option<String>,
}

/// Everything the views show.
#[derive(Default)]
pub struct State {
    /// Loaded checkpoints, in compare order.
    pub checkpoints: Vec<Checkpoint>,
    /// The data of each checkpoint's files, by checkpoint id.
    pub blobs: HashMap<u32, Vec<Blob>>,
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
    /// Snapshot files opened for decompression.
    pub snapshots: Vec<SnapshotFile>,
    /// Codec preset id for whole files (LMC when empty).
    pub preset: String,
    /// Base checkpoint for compression (XOR deltas).
    pub base: Option<u32>,
    /// Per-tensor codec overrides, by checkpoint id.
    pub overrides: HashMap<u32, BTreeMap<String, &'static Preset>>,
    /// The last compression of each checkpoint.
    pub compressed: HashMap<u32, CompressRun>,
    /// Codec comparisons by (checkpoint, tensor).
    pub roundtrips: HashMap<(u32, String), Vec<RoundtripRow>>,
    /// The codec job running.
    pub codec_job: Option<Job>,
    /// Error of the last codec job.
    pub codec_error: Option<String>,
    /// The build of the module the codec worker runs, once it has started.
    pub codec_build: Option<Build>,
    /// Shard indexes given with snapshot sets (restored as they are).
    pub snapshot_indexes: Vec<Output>,
    /// The shard index file of each sharded checkpoint that came with one, by checkpoint id.
    pub indexes: HashMap<u32, (String, Blob)>,
    next_id: u32,
    next_snapshot: u32,
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

    /// The preset chosen for whole files.
    pub fn preset(&self) -> &'static Preset {
        preset_by_id(&self.preset).unwrap_or(&PRESETS[0])
    }

    /// A tensor's codec override in a checkpoint.
    pub fn override_of(&self, ckpt: u32, tensor: &str) -> Option<&'static Preset> {
        self.overrides.get(&ckpt)?.get(tensor).copied()
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
    /// Choose the whole-file codec preset.
    SetPreset(String),
    /// Choose the base checkpoint for compression.
    SetBase(Option<u32>),
    /// Compress the active checkpoint.
    Compress,
    /// Stop the codec job.
    CodecCancel,
    /// The codec worker reported.
    Codec(CodecEvent),
    /// Choose a snapshot's base checkpoint.
    SnapshotBase(u32, Option<u32>),
    /// Decompress a snapshot.
    Decompress(u32),
    /// Decompress every snapshot that is ready (index read, base chosen for deltas).
    DecompressAll,
    /// Set (or clear) a tensor's codec override in the active checkpoint.
    SetOverride(String, Option<String>),
    /// Run the codec comparison on a tensor of the active checkpoint.
    CompareCodecs(String),
}

/// The root component.
pub struct App {
    state: State,
    jobs: Jobs,
    pool: Pool,
    codec: CodecRunner,
    /// Snapshots whose index is still to be read.
    pending_info: Vec<u32>,
    /// The snapshots (download, result) of the running compress job so far, in file order.
    compress_parts: Vec<(Output, Compressed)>,
    /// The output file being received from the codec worker: (job, file index, its chunks).
    building: Option<(u32, usize, crate::ui::io::blob::BlobBuilder)>,
    pending_table: Option<f64>,
}

/// An object URL for a blob.
fn object_url(blob: &Blob) -> String {
    Url::create_object_url_with_blob(blob).unwrap_or_default()
}

fn revoke(output: Option<&Output>) {
    if let Some(o) = output {
        let _ = Url::revoke_object_url(&o.url);
    }
}

impl App {
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

    fn apply_results(&mut self, task: u32, results: Vec<(usize, String)>) {
        let Some(kind) = self.jobs.tasks.get(&task).cloned() else {
            return;
        };
        match kind {
            TaskKind::Stats { ckpt } => {
                let Some(c) = self.state.checkpoints.iter_mut().find(|c| c.id == ckpt) else {
                    return;
                };
                for (item, json) in results {
                    match serde_json::from_str::<TensorStats>(&json) {
                        Ok(s) => c.set_stats(item, s),
                        Err(e) => self.state.errors.push(LoadError {
                            file: c.name.clone(),
                            reason: format!("statistics of row {item} unreadable: {e}"),
                        }),
                    }
                }
            }
            TaskKind::Flips { a, b } => {
                let Some(cmp) = self
                    .state
                    .comparisons
                    .iter_mut()
                    .find(|c| c.a == a && c.b == b)
                else {
                    return;
                };
                for (item, json) in results {
                    match serde_json::from_str::<FlipStats>(&json) {
                        Ok(f) => cmp.set_flips(item, f),
                        Err(e) => self.state.errors.push(LoadError {
                            file: "comparison".into(),
                            reason: format!("flip statistics of pair {item} unreadable: {e}"),
                        }),
                    }
                }
            }
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
            PoolEvent::Update {
                task,
                bytes,
                results,
            } => {
                if self.jobs.tasks.contains_key(&task) {
                    self.jobs.progress(bytes);
                    self.apply_results(task, results);
                }
            }
            PoolEvent::Done {
                worker,
                task,
                bytes,
                results,
                memory,
            } => {
                if self.pool.running(worker) != Some(task) {
                    return; // a report from a cancelled run
                }
                self.jobs.progress(bytes);
                self.apply_results(task, results);
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
        for (path, blob) in outcome.snapshot_indexes {
            let name = crate::model::codec::file_name(&path).to_owned();
            self.state.snapshot_indexes.push(Output {
                url: object_url(&blob),
                name,
                bytes: blob.size() as u64,
                seconds: 0.0,
                memory: 0,
            });
        }
        for (name, blob) in outcome.snapshots {
            let id = self.state.next_snapshot;
            self.state.next_snapshot += 1;
            self.state.snapshots.push(SnapshotFile {
                id,
                name,
                blob,
                info: None,
                base: None,
                output: None,
                error: None,
            });
            self.pending_info.insert(0, id);
            if self.state.tab.is_none() || self.state.checkpoints.is_empty() {
                self.state.tab = Some(Tab::Codecs);
            }
        }
        self.next_info();
        self.state.codec_job = self.codec.job.clone();
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
    type Properties = ();

    fn create(ctx: &Context<Self>) -> Self {
        App {
            state: State {
                next_id: 1,
                ..State::default()
            },
            jobs: Jobs::default(),
            pool: Pool::new(ctx.link().callback(Msg::Pool)),
            codec: CodecRunner::new(ctx.link().callback(Msg::Codec)),
            pending_info: Vec::new(),
            compress_parts: Vec::new(),
            building: None,
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
                if let Some(r) = self.state.compressed.remove(&id) {
                    r.revoke();
                }
                self.state.indexes.remove(&id);
                self.state.overrides.remove(&id);
                if self.state.base == Some(id) {
                    self.state.base = None;
                }
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
                self.codec.cancel();
                self.drop_partial();
                self.state.codec_job = None;
                self.pending_info.clear();
                for s in self.state.snapshots.drain(..) {
                    revoke(s.output.as_ref());
                }
                for (_, r) in self.state.compressed.drain() {
                    r.revoke();
                }
                for o in self.state.snapshot_indexes.drain(..) {
                    revoke(Some(&o));
                }
                self.state.indexes.clear();
                self.state.overrides.clear();
                self.state.roundtrips.clear();
                self.state.base = None;
            }
            Msg::Select(id) => self.state.active = Some(id),
            Msg::Tab(t) => {
                self.state.tab = Some(t);
                if t == Tab::Codecs {
                    // Start the codec worker now, so it reports its build before the first job.
                    if let Err(e) = self.codec.warm() {
                        self.codec_failed("codec worker".into(), e);
                    }
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
            Msg::SetPreset(id) => self.state.preset = id,
            Msg::SetBase(b) => self.state.base = b,
            Msg::Compress => {
                self.start_compress();
                self.state.codec_job = self.codec.job.clone();
            }
            Msg::CodecCancel => {
                self.codec.cancel();
                self.drop_partial();
                self.state.codec_job = None;
                self.state.codec_error = Some("cancelled".into());
                self.next_info();
                self.state.codec_job = self.codec.job.clone();
            }
            Msg::Codec(e) => return self.on_codec(e),
            Msg::SnapshotBase(snap, base) => {
                if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == snap) {
                    s.base = base;
                }
            }
            Msg::Decompress(snap) => {
                self.start_decompress(vec![snap]);
                self.state.codec_job = self.codec.job.clone();
            }
            Msg::DecompressAll => {
                let snaps = self.ready_snapshots();
                if !snaps.is_empty() {
                    self.start_decompress(snaps);
                }
                self.state.codec_job = self.codec.job.clone();
            }
            Msg::SetOverride(tensor, preset) => {
                let Some(id) = self.state.active else {
                    return false;
                };
                let map = self.state.overrides.entry(id).or_default();
                match preset.as_deref().and_then(preset_by_id) {
                    Some(p) => {
                        map.insert(tensor, p);
                    }
                    None => {
                        map.remove(&tensor);
                    }
                }
            }
            Msg::CompareCodecs(tensor) => {
                self.start_roundtrip(tensor);
                self.state.codec_job = self.codec.job.clone();
            }
        }
        true
    }

    fn rendered(&mut self, ctx: &Context<Self>, _first: bool) {
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
        html! {
            <div class={classes!("app", s.drag.then_some("dragging"))}
                 {ondragover} {ondragleave} {ondrop}>
                { views::chrome::header(link, s) }
                { views::chrome::errors(link, s) }
                { views::chrome::progress(link, s, &self.jobs, self.pool.size()) }
                if s.checkpoints.is_empty() && s.snapshots.is_empty() {
                    { views::chrome::welcome(link, s) }
                } else {
                    { views::chrome::checkpoints(link, s) }
                    { views::chrome::tabs(link, s) }
                    <main class="panel">
                        { match s.tab() {
                            Tab::Summary => views::summary::view(s),
                            Tab::Tensors => views::table::view(link, s),
                            Tab::Detail => views::detail::view(link, s),
                            Tab::Compare => views::compare::view(link, s),
                            Tab::Codecs => views::codecs::view(link, s),
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
