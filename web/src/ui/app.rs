//! The root component: the app's state, the messages that change it, and the page layout.
//!
//! Flow: files arrive (picker, drop, demo) or URLs (`?url=`, the URL box, the [`AppProps`] of an
//! embed) → [`loader::load`] / [`loader::load_urls`] read headers only (and remote files'
//! sidecars, whose matching statistics fill the tables at once) → checkpoints and their
//! tensor tables show at once → [`Jobs`] plans worker tasks for missing statistics (and flip
//! statistics between consecutive checkpoints) → the [`Pool`] runs them and results fill the views.
//! Remote checkpoints larger than [`AppProps::auto_stats`] wait for the visitor before whole-model
//! statistics; a selected tensor's statistics never wait (planned ahead of the queue).
//! The codec panel ([`codecs`]) has its own state and messages ([`CodecMsg`]); the root hands them
//! on. Each view gets only the parts of the state it shows. The view state (checkpoint URLs, tab,
//! tensor) is written into the page URL ([`crate::model::link`]) so a copied link reproduces the view.
//!
//! - `props`: [`AppProps`] and the [`Tab`]s; `state`: the [`State`] the views read.
//! - `analysis`: comparisons, planning and feeding the worker pool, folding its results in.
//! - `host`: the page link, the events and report for an embedding page.
//! - `offers`: what an error line about a URL offers (read it whole, try it again).
//! - [`codecs`]: the codec panel.

use crate::model::table::SortKey;
use crate::ui::events::ViewEvent;
use crate::ui::io::demo;
use crate::ui::io::files::{self, Dropped, Picked};
use crate::ui::jobs::{mark, now, Jobs};
use crate::ui::loader::{self, LoadError, Outcome};
use crate::ui::pool::{Pool, PoolEvent};
use crate::ui::views;
use codecs::{CodecMsg, CodecPanel, Ctx};
use web_sys::DragEvent;
use yew::prelude::*;

mod analysis;
pub mod codecs;
mod host;
mod load;
mod offers;
mod props;
mod snapshots;
mod state;

pub use props::{AppProps, Tab};
pub use state::State;

/// Messages of the root component.
pub enum Msg {
    /// Files were given (picker, drop or demo) at `performance.now()` = the `f64`.
    Given(Vec<Picked>, f64),
    /// A drop's entries were walked.
    Dropped(Vec<Dropped>, f64),
    /// The statistics' progress is due on screen (see [`analysis::PoolRender`]).
    PoolRender,
    /// The tensor table was scrolled to its last drawn row while statistics run.
    MoreRows,
    /// The statistics' redraw is done, its children's rows included: time to weigh its cost.
    PoolRendered,
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
    /// Open a URL again that could not be opened (the visitor asked).
    Retry(String),
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
    /// Select a tensor, staying in the open view (the tensor pickers).
    Pick(String),
    /// Show comparison `i`.
    Step(usize),
    /// Dismiss error `i`.
    Dismiss(usize),
    /// Drag state changed.
    Drag(bool),
    /// A message of the codec panel.
    Codec(CodecMsg),
    /// The page's hash changed (`#learn/…` opens a lesson).
    Hash,
}

/// The root component.
pub struct App {
    state: State,
    codecs: CodecPanel,
    jobs: Jobs,
    pool: Pool,
    pending_table: Option<f64>,
    /// When the statistics' progress was last drawn.
    pool_render: analysis::PoolRender,
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
    /// The lesson shown instead of the panel (`#learn/…`; never in an embed).
    learn: Option<views::learn::Route>,
    _hash: Option<views::learn::Listener>,
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
            pool_render: analysis::PoolRender::default(),
            embed: props.embed || from_page.embed,
            want_tensor: props.tensor.clone().or(from_page.tensor),
            errors_told: 0,
            reported: None,
            linked: None,
            learn: None,
            _hash: None,
        };
        if !app.embed {
            app.learn = views::learn::Route::current();
            let link = ctx.link().clone();
            app._hash =
                views::learn::Listener::window("hashchange", move |_| link.send_message(Msg::Hash));
        }
        let (urls, stats) = match &props.urls {
            Some(urls) => (urls.clone(), props.stats.clone()),
            None => (from_page.urls, from_page.stats),
        };
        app.state.stats.clone_from(&stats);
        app.open_urls(ctx, urls, stats);
        app
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &AppProps) -> bool {
        let props = ctx.props().clone();
        if props.urls != old.urls || props.stats != old.stats {
            self.clear();
            // The new checkpoints open in the asked-for view, on the asked-for tensor.
            self.state.tab = props.view.as_deref().and_then(Tab::from_name);
            self.want_tensor = props.tensor.clone();
            self.state.stats.clone_from(&props.stats);
            let urls = props.urls.clone().unwrap_or_default();
            self.open_urls(ctx, urls, props.stats.clone());
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
                // The statistics follow the headers: their workers start while those are read.
                if let Err(e) = self.pool.warm() {
                    self.state.errors.push(LoadError {
                        file: "worker pool".into(),
                        reason: e,
                    });
                }
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
            Msg::OpenUrls(urls) => self.open_urls(ctx, urls, Vec::new()),
            Msg::DownloadWhole(url) => self.download_whole(ctx, url),
            Msg::Retry(url) => self.retry(ctx, url),
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
            Msg::Pool(event) => {
                self.on_pool(event);
                if !self.pool_render_due(ctx) {
                    return false;
                }
            }
            Msg::PoolRender => self.on_pool_render(ctx),
            Msg::PoolRendered => {
                self.pool_render.measure();
                return false;
            }
            Msg::Cancel => {
                self.pool.cancel();
                self.jobs.cancel();
            }
            Msg::Resume => self.schedule(props.auto_stats),
            Msg::Remove(id) => {
                let was_running = self.jobs.running();
                self.pool.cancel();
                self.jobs.cancel();
                self.forget_snapshot(id);
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
                if t != Tab::Values {
                    // Leaving Values stops its workers: others start for the next visit.
                    self.keep_map_workers_warm();
                }
                self.schedule_shown();
            }
            Msg::Sort(k) => self.state.table.click(k),
            Msg::Filter(f) => self.state.table.filter = f,
            Msg::MoreRows => self.state.table.draw_more(),
            Msg::Detail(name) => {
                self.select(name, &props);
                self.state.tab = Some(Tab::Detail);
                self.schedule_shown();
            }
            Msg::Pick(name) => {
                self.select(name, &props);
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
                let redraw = panel.update(msg, ctx);
                let before = self.state.checkpoints.len();
                self.on_codec_news(&props);
                if self.state.checkpoints.len() != before {
                    self.rebuild_comparisons();
                }
                return redraw;
            }
            Msg::Hash => {
                let route = views::learn::Route::current();
                if route == self.learn {
                    return false;
                }
                self.learn = route;
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
                { views::chrome::errors(link, &s.errors, &s.offers, self.retryable()) }
                { views::chrome::notes(&s.notes) }
                { views::chrome::progress(link, s.loading, s.table_ms, &self.jobs, self.pool.size()) }
                if let Some(c) = waiting {
                    { views::chrome::stats_button(link, c) }
                }
                if local_in_link {
                    <p class="note link-note">{ "The page link reopens only the checkpoints opened by URL; local files are not part of it." }</p>
                }
                if let Some(route) = self.learn.clone() {
                    <views::learn::Learn {route} loading={s.loading} has_checkpoints={!s.checkpoints.is_empty()}
                        tensors={views::learn::source::sources(active, s.active.and_then(|id| s.sources.get(&id)))}
                        pair={views::learn::delta::pair(&s.checkpoints, s.active, &s.sources)}
                        on_demo={link.callback(|()| Msg::Demo)} />
                } else if !has_content {
                    if !embed {
                        { views::chrome::welcome(link, s.loading) }
                    } else if s.loading {
                        <p class="note">{ "Loading…" }</p>
                    }
                } else {
                    if !embed || s.checkpoints.len() > 1 {
                        { views::chrome::checkpoints(link, &s.checkpoints, s.active, !embed) }
                    }
                    { views::chrome::tabs(link, s.tab(), s.checkpoints.iter().filter(|c| c.snapshot.is_none()).count()) }
                    <main class="panel" part="panel">
                        { match s.tab() {
                            Tab::Summary => views::summary::view(active),
                            Tab::Tensors => views::table::view(link, &views::table::Props {
                                checkpoint: active,
                                table: &s.table,
                                compressed: active.and_then(|c| codecs.compressed.get(&c.id)),
                                running: self.jobs.running(),
                            }),
                            Tab::Detail => views::detail::view(link, &on_codec, &views::detail::Props {
                                checkpoint: active,
                                detail: s.detail.as_deref(),
                                codecs,
                            }),
                            Tab::Values => views::values::panel(link, &s.checkpoints, active, s.detail.as_deref(), &s.sources),
                            Tab::Compare => views::compare::view(link, &views::compare::Props {
                                checkpoints: &s.checkpoints,
                                comparisons: &s.comparisons,
                                step: s.step,
                            }),
                            Tab::Codecs => views::codecs::view(&on_codec, &views::codecs::Props::new(
                                &s.checkpoints,
                                active,
                                codecs,
                                embed,
                            )),
                        } }
                    </main>
                }
                if s.drag {
                    <div class="drop-overlay">{ "Drop checkpoint files (safetensors, GGUF, PyTorch, NumPy), an index.json with its shards, .bls snapshots, or folders" }</div>
                }
            </div>
        }
    }
}
