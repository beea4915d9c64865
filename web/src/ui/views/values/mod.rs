//! The Values view: a tensor's values as a zoomable, pannable weight map, and its first values.
//!
//! The map is computed in the view's own workers, one per core, each a band of cell rows
//! (`WorkerRequest::WeightMap`, `bitlens_stats::weightmap`), from the tensor's byte range only, so
//! a 1 GB matrix is drawn without being held and a remote one reads only its own bytes: first a
//! base tile of the whole tensor in at most [`crate::model::weightmap::BASE_CELLS`] cells, then, once the view is zoomed in past the base's
//! blocks, a detail tile of what is on screen at screen resolution (the base, scaled up, shows
//! until it comes). A pixel shows the aggregate of the cells under it (mean, absolute max,
//! max − min or fraction of zeros) of a layer — the values (a ggml block type's dequantized), one
//! bit plane, the exponents, or the changes from the previous checkpoint — on a diverging or
//! sequential colour scale (linear, symmetric log or by quantile) with a legend
//! ([`crate::model::weightmap`]). Hovering reads the lane under the pointer exactly
//! (`WorkerRequest::Elements`): index, value and bits, beside the pixel's aggregate and the lanes
//! it covers; the table of first values reads a range the visitor picks.
//!
//! - [`controls`]: the layer, aggregate, scale and zoom controls.
//! - [`readout`]: the hover readout and the table of values.
//! - [`panel`]: the view of the app's selected tensor, paired with the checkpoint before it.
//! - [`requests`]: what the view asks its workers, and their answers folded back in.
//! - [`workers`]: the view's workers, each computing a band of a window.

mod controls;
mod panel;
mod readout;
mod requests;
mod workers;

pub use panel::panel;
pub use workers::prewarm;

use crate::model::format::shape as shape_text;
use crate::model::weightmap::colour::Normalizer;
use crate::model::weightmap::raster::{pixel_cells, raster};
use crate::model::weightmap::viewport::Viewport;
use crate::model::weightmap::{Aggregate, Quantity, Scale};
use crate::ui::loader::Source;
use bitlens_protocol::js::Event as WorkerEvent;
use bitlens_stats::weightmap::{Element, Grid, Layer, Tile};
use bitlens_tensors::format::{ElementType, Entry};
use gloo_events::{EventListener, EventListenerOptions};
use readout::Hover;
use std::rc::Rc;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData, WheelEvent};
use workers::{MapJob, MapWorkers};
use yew::prelude::*;

/// Canvas height in pixels.
const HEIGHT: u32 = 420;

/// Zoom factor of one wheel notch or button press.
const STEP: f64 = 1.25;

/// One tensor in one checkpoint: where its file is and how the format describes it.
#[derive(Clone, PartialEq)]
pub struct TensorAt {
    /// The file holding it.
    pub file: Source,
    /// The tensor.
    pub entry: Entry,
}

/// The tensor in two consecutive checkpoints (same type and shape), for the changes layer:
/// changes are `second − first`.
#[derive(Clone, PartialEq)]
pub struct Pair {
    /// In the earlier checkpoint.
    pub first: TensorAt,
    /// In the later checkpoint.
    pub second: TensorAt,
    /// The two checkpoints' labels, `A → B`.
    pub label: String,
}

/// Props of [`Values`].
#[derive(Properties, PartialEq)]
pub struct ValuesProps {
    /// The tensor shown.
    pub tensor: TensorAt,
    /// The tensor in the shown checkpoint and the one before it (or after it, for the first).
    #[prop_or_default]
    pub pair: Option<Pair>,
}

/// Messages of [`Values`].
pub enum Msg {
    /// The worker reported.
    Worker(WorkerEvent),
    /// Another layer, aggregate or scale.
    Layer(Layer),
    /// Another aggregate.
    Aggregate(Aggregate),
    /// Another colour scale.
    Scale(Scale),
    /// Zoom by a factor about a canvas point (off the canvas: about its centre).
    Zoom(f64, f64, f64),
    /// Back to the whole tensor.
    Fit,
    /// Pointer pressed at a canvas point.
    Press(f64, f64),
    /// Pointer moved to a canvas point.
    Move(f64, f64),
    /// Pointer released.
    Release,
    /// Pointer left the canvas.
    Leave,
    /// The first-values range changed: (first lane, count).
    Range(u64, u64),
    /// The canvas's box is this wide.
    Measured(u32),
}

/// What the view asked its workers and is waiting for.
#[derive(Default)]
struct Asked {
    /// The base tile.
    base: Option<MapJob>,
    /// The detail tile.
    detail: Option<MapJob>,
    /// The hover's lane (task id).
    hover: u32,
    /// The table's lanes (task id).
    table: u32,
}

/// The view's state.
pub struct Values {
    workers: MapWorkers,
    asked: Asked,
    layer: Layer,
    aggregate: Aggregate,
    scale: Scale,
    grid: Grid,
    viewport: Option<Viewport>,
    base: Option<Rc<Tile>>,
    detail: Option<Rc<Tile>>,
    /// Where a drag started (canvas point) while the pointer is down.
    drag: Option<(f64, f64)>,
    hover: Option<Hover>,
    first: (u64, u64),
    table: Option<Vec<Element>>,
    error: Option<String>,
    /// Milliseconds the last base / detail tile took from request to drawn.
    base_ms: Option<f64>,
    detail_ms: Option<f64>,
    /// Milliseconds the slowest worker spent on the base tile's band.
    base_worker_ms: Option<f64>,
    /// Pictures drawn (the tests wait on it).
    draws: u32,
    /// The picture's scale, for the legend and the hover colour.
    normalizer: Option<Normalizer>,
    canvas: NodeRef,
    _wheel: Option<EventListener>,
}

impl Values {
    fn quantity(&self) -> Quantity {
        Quantity {
            layer: self.layer,
            aggregate: self.aggregate,
        }
    }

    /// The tiles to draw from, finest first.
    fn tiles(&self) -> Vec<&Tile> {
        let fine = self.detail.as_deref().filter(|d| d.layer == self.layer);
        fine.into_iter().chain(self.base.as_deref()).collect()
    }

    /// Draws the picture of the current view on the canvas.
    fn draw(&mut self) {
        let (Some(v), Some(canvas)) = (self.viewport, self.canvas.cast::<HtmlCanvasElement>())
        else {
            return;
        };
        let tiles = self.tiles();
        if tiles.is_empty() {
            return;
        }
        // Sized here, not in the markup: a re-render that set the size would clear the picture.
        if canvas.width() != v.width || canvas.height() != v.height {
            canvas.set_width(v.width);
            canvas.set_height(v.height);
        }
        let q = self.quantity();
        let values = raster(&v, &tiles, q);
        let normalizer = Normalizer::new(&values, q, self.scale);
        let pixels = normalizer.pixels(&values);
        let drawn = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
            .zip(
                ImageData::new_with_u8_clamped_array_and_sh(Clamped(&pixels), v.width, v.height)
                    .ok(),
            )
            .map(|(c, image)| c.put_image_data(&image, 0.0, 0.0));
        if let Some(Err(e)) = drawn {
            self.error = Some(crate::ui::io::blob::js_error_text(&e));
        }
        self.normalizer = Some(normalizer);
        self.draws += 1;
    }

    /// The canvas's width: its box's, once laid out.
    fn measure(&self) -> Option<u32> {
        let canvas = self.canvas.cast::<HtmlCanvasElement>()?;
        let w = canvas.parent_element()?.client_width();
        (w > 0).then_some(w as u32)
    }

    /// The hover readout of canvas point (`x`, `y`).
    fn hover_at(&mut self, ctx: &Context<Self>, x: f64, y: f64) {
        let Some(v) = self.viewport else { return };
        let Some((row, col)) = v.lane_at(x, y) else {
            self.hover = None;
            return;
        };
        let (px, py) = (x.floor().max(0.0) as u32, y.floor().max(0.0) as u32);
        let tiles = self.tiles();
        let q = self.quantity();
        let cells = pixel_cells(&v, &tiles, px, py).map(|c| {
            let tile = tiles[c.tile];
            (
                c.lanes(tile),
                crate::model::weightmap::raster::combine(tile, q, c),
            )
        });
        let colour = cells.and_then(|(_, value)| self.normalizer.as_ref()?.colour(value));
        let lane = self.grid.lane(row, col);
        let task = match lane {
            Some(l) => self.request_lanes(ctx, l, 1),
            None => 0,
        };
        self.asked.hover = task;
        self.hover = Some(Hover {
            x: px,
            y: py,
            row,
            col,
            lane,
            cells,
            colour,
            element: None,
        });
    }
}

impl Component for Values {
    type Message = Msg;
    type Properties = ValuesProps;

    fn create(ctx: &Context<Self>) -> Self {
        let p = ctx.props();
        let mut me = Values {
            workers: MapWorkers::new(ctx.link().callback(Msg::Worker)),
            asked: Asked::default(),
            layer: Layer::Values,
            aggregate: Aggregate::Mean,
            scale: Scale::Linear,
            grid: grid_of(&p.tensor.entry),
            viewport: None,
            base: None,
            detail: None,
            drag: None,
            hover: None,
            first: (0, 32),
            table: None,
            error: None,
            base_ms: None,
            detail_ms: None,
            base_worker_ms: None,
            draws: 0,
            normalizer: None,
            canvas: NodeRef::default(),
            _wheel: None,
        };
        if let Err(e) = me.workers.warm() {
            me.error = Some(e);
        }
        me.asked.table = me.request_lanes(ctx, 0, 32);
        me
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &ValuesProps) -> bool {
        let p = ctx.props();
        if p.tensor != old.tensor {
            // Start over on the new tensor, keeping the worker, the canvas and its listener.
            self.grid = grid_of(&p.tensor.entry);
            self.layer = Layer::Values;
            self.hover = None;
            self.first = (0, 32);
            self.table = None;
            self.base_ms = None;
            self.detail_ms = None;
            self.normalizer = None;
            self.viewport = self
                .measure()
                .map(|w| Viewport::fit(self.grid.rows, self.grid.cols, w, HEIGHT));
            self.request_base(ctx);
            self.asked.table = self.request_lanes(ctx, 0, 32);
        } else if p.pair != old.pair && self.layer == Layer::Changes {
            self.layer = Layer::Values;
            self.request_base(ctx);
        }
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Worker(event) => return self.on_worker(ctx, event),
            Msg::Layer(layer) => {
                if layer != self.layer {
                    self.layer = layer;
                    if matches!(layer, Layer::BitPlane { .. } | Layer::Exponent)
                        && self.aggregate != Aggregate::Mean
                    {
                        self.aggregate = Aggregate::Mean;
                    }
                    self.request_base(ctx);
                }
            }
            Msg::Aggregate(a) => {
                self.aggregate = a;
                self.draw();
            }
            Msg::Scale(s) => {
                self.scale = s;
                self.draw();
            }
            Msg::Zoom(factor, x, y) => {
                if let Some(v) = self.viewport.as_mut() {
                    // The buttons zoom about the centre (they send a point off the canvas).
                    let (x, y) = if x < 0.0 || y < 0.0 {
                        (f64::from(v.width) / 2.0, f64::from(v.height) / 2.0)
                    } else {
                        (x, y)
                    };
                    v.zoom(factor, x, y);
                    self.draw();
                    self.request_detail(ctx);
                }
            }
            Msg::Fit => {
                if let Some(v) = self.viewport.as_mut() {
                    *v = Viewport::fit(v.rows, v.cols, v.width, v.height);
                    self.draw();
                }
            }
            Msg::Press(x, y) => self.drag = Some((x, y)),
            Msg::Move(x, y) => {
                if let Some((x0, y0)) = self.drag {
                    if let Some(v) = self.viewport.as_mut() {
                        v.pan(x - x0, y - y0);
                        self.drag = Some((x, y));
                        self.draw();
                        self.request_detail(ctx);
                    }
                } else {
                    self.hover_at(ctx, x, y);
                }
            }
            Msg::Release => self.drag = None,
            Msg::Leave => {
                self.drag = None;
                self.hover = None;
            }
            Msg::Measured(w) => {
                self.viewport = Some(Viewport::fit(self.grid.rows, self.grid.cols, w, HEIGHT));
                self.request_base(ctx);
            }
            Msg::Range(start, count) => {
                let count = count.clamp(1, readout::MAX_ROWS);
                self.first = (start, count);
                self.table = None;
                self.asked.table = self.request_lanes(ctx, start, count);
            }
        }
        true
    }

    fn rendered(&mut self, ctx: &Context<Self>, first: bool) {
        if first {
            if let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() {
                let link = ctx.link().clone();
                self._wheel = Some(EventListener::new_with_options(
                    &canvas,
                    "wheel",
                    EventListenerOptions::enable_prevent_default(),
                    move |e| {
                        let e = e.unchecked_ref::<WheelEvent>();
                        e.prevent_default();
                        let factor = if e.delta_y() < 0.0 { STEP } else { 1.0 / STEP };
                        link.send_message(Msg::Zoom(
                            factor,
                            f64::from(e.offset_x()),
                            f64::from(e.offset_y()),
                        ));
                    },
                ));
            }
        }
        if self.viewport.is_none() {
            if let Some(w) = self.measure() {
                ctx.link().send_message(Msg::Measured(w));
            }
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let p = ctx.props();
        let link = ctx.link();
        let e = &p.tensor.entry;
        let point = |e: &PointerEvent| (f64::from(e.offset_x()), f64::from(e.offset_y()));
        let onpointerdown = link.callback(move |e: PointerEvent| {
            if let Some(t) = e.target_dyn_into::<web_sys::Element>() {
                let _ = t.set_pointer_capture(e.pointer_id());
            }
            let (x, y) = point(&e);
            Msg::Press(x, y)
        });
        let onpointermove = link.callback(move |e: PointerEvent| {
            let (x, y) = point(&e);
            Msg::Move(x, y)
        });
        let onpointerup = link.callback(|_: PointerEvent| Msg::Release);
        let onpointerleave = link.callback(|_: PointerEvent| Msg::Leave);
        let v = self.viewport;
        let detail_block = self.detail.as_ref().map_or(String::new(), |d| {
            format!("{}x{}", d.window.block_rows, d.window.block_cols)
        });
        html! {
            <section class="values" id="values" data-tensor={e.name.clone()}>
                <h2 class="values-title">
                    <span class="tensor-name" title={e.name.clone()}>{ &e.name }</span>
                    <span class="dim">{ format!(" · {} · shape {} · map {} × {}", type_name(e.ty), shape_text(&e.shape), self.grid.rows, self.grid.cols) }</span>
                </h2>
                { controls::view(link, self.layer, self.aggregate, self.scale, e.ty, p.pair.as_ref().map(|p| p.label.as_str())) }
                if let Some(err) = &self.error {
                    <p class="error-text" role="alert">{ err }</p>
                }
                <div class="values-stage">
                    <canvas ref={self.canvas.clone()} id="values-map" class="values-map"
                        role="img" aria-label={format!("weight map of {}: {}", e.name, self.quantity().label())}
                        data-ready={u8::from(self.base.is_some() && self.draws > 0).to_string()}
                        data-draws={self.draws.to_string()}
                        data-rows={self.grid.rows.to_string()} data-cols={self.grid.cols.to_string()}
                        data-row-scale={v.map_or(0.0, |v| v.row_scale).to_string()}
                        data-col-scale={v.map_or(0.0, |v| v.col_scale).to_string()}
                        data-zoom={v.map_or(1.0, |v| v.zoom_level()).to_string()}
                        data-row0={v.map_or(0.0, |v| v.row0).to_string()}
                        data-col0={v.map_or(0.0, |v| v.col0).to_string()}
                        data-base-block={self.base.as_ref().map_or(String::new(), |b| format!("{}x{}", b.window.block_rows, b.window.block_cols))}
                        data-detail-block={detail_block}
                        data-detail-pending={u8::from(self.asked.detail.is_some()).to_string()}
                        data-base-ms={self.base_ms.map(|m| format!("{m:.1}")).unwrap_or_default()}
                        data-base-worker-ms={self.base_worker_ms.map(|m| format!("{m:.1}")).unwrap_or_default()}
                        data-detail-ms={self.detail_ms.map(|m| format!("{m:.1}")).unwrap_or_default()}
                        data-bytes-read={(self.base.as_ref().map_or(0, |b| b.bytes_read) + self.detail.as_ref().map_or(0, |d| d.bytes_read)).to_string()}
                        {onpointerdown} {onpointermove} {onpointerup} {onpointerleave} />
                    if self.base.is_none() && self.error.is_none() {
                        <p class="note values-wait" aria-live="polite">{ "Computing the map in a worker from the tensor's bytes…" }</p>
                    }
                </div>
                { controls::legend(self.normalizer.as_ref(), &self.quantity()) }
                { readout::hover(self.hover.as_ref(), self.quantity()) }
                { readout::table(link, self.first, self.table.as_deref(), self.grid) }
            </section>
        }
    }
}

/// The map's grid of a tensor (a complex value is two lanes).
fn grid_of(entry: &Entry) -> Grid {
    let lanes = if entry.ty == ElementType::Dtype(bitlens_tensors::Dtype::C64) {
        2
    } else {
        1
    };
    Grid::of_shape(&entry.shape, lanes)
}

/// An element type's name (`BF16`, `Q4_K`).
fn type_name(ty: ElementType) -> String {
    match ty {
        ElementType::Dtype(d) => d.name().to_string(),
        ElementType::Ggml(g) => g.name().unwrap_or("ggml").to_string(),
    }
}
