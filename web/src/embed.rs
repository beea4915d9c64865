//! The mount API of the `<bitlens-view>` element (`web/embed/bitlens-embed.js`): one Yew app per
//! element, mounted into a node of the element's shadow root, its props set from the element's
//! attributes.
//!
//! The element loads this crate's wasm module (the Trunk-built `bitlens-web.js`) once per page
//! with the global `__bitlensEmbed` set, so the binary's `main` does not mount the full app on the
//! page's `<body>` ([`embedded`]); it calls [`set_asset_base`] with its script's URL (workers and
//! their modules are found there, see [`crate::ui::assets`]), then [`mount_view`] per element.
//! Options travel as JSON ([`Options`]); the app's [`ViewEvent`]s go to the element's callback as
//! `(type, detail)` (`bitlens-load` / `bitlens-select` / `bitlens-error`, the detail a plain
//! object), and [`ViewHandle::inspect`] returns the `bitlens inspect --json` document of what the
//! view has loaded (a remote file's statistics from its sidecar when it matches the file).
//! The element's `theme` is the root node's `data-theme` ([`Theme`]), which web/style.css turns
//! into the root's `color-scheme`.

use crate::ui::app::{App, AppProps};
use crate::ui::events::{ReportSlot, ViewEvent};
use bitlens_report::inspect::InspectReport;
use bitlens_report::view::ViewReport;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use web_sys::Element;
use yew::{AppHandle, Callback};

/// The global a page sets (to anything truthy) before loading this module when it wants only the
/// mount API, not the app on its `<body>`.
const EMBED_FLAG: &str = "__bitlensEmbed";

/// True when the module was loaded by the embed (the global `__bitlensEmbed` is truthy).
pub fn embedded() -> bool {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(EMBED_FLAG))
        .map(|v| v.is_truthy())
        .unwrap_or(false)
}

/// What an element's attributes set, as the element sends it (JSON, camelCase).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Options {
    /// `src`: the URLs to open (several: checkpoints to compare).
    pub urls: Vec<String>,
    /// `stats`: sidecar URLs, the `i`-th for the `i`-th of `urls` (else `<url>.bitlens.json`).
    pub stats: Vec<String>,
    /// `tensor`: the tensor to select.
    pub tensor: Option<String>,
    /// `view`: `summary` | `table` | `detail` | `compare`.
    pub view: Option<String>,
    /// `auto-stats`: bytes above which whole-model statistics wait for the visitor.
    pub auto_stats: Option<u64>,
    /// `credentials`: send cookies with the requests.
    pub credentials: bool,
    /// `theme`: light, dark, or the system's.
    pub theme: Theme,
}

/// An element's colour theme (its `theme` attribute; anything else reads as [`Theme::Auto`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Dark text on light backgrounds.
    Light,
    /// Light text on dark backgrounds.
    Dark,
    /// The visitor's system theme (`prefers-color-scheme`).
    #[default]
    #[serde(other)]
    Auto,
}

impl Theme {
    /// The root node's `data-theme`.
    fn name(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
            Theme::Auto => "auto",
        }
    }

    /// Puts the theme on the root node the view is mounted in.
    fn apply(self, root: &Element) {
        let _ = root.set_attribute("data-theme", self.name());
    }
}

impl Options {
    /// Reads the element's JSON.
    fn parse(json: &str) -> Result<Options, JsError> {
        serde_json::from_str(json).map_err(|e| JsError::new(&format!("bad view options: {e}")))
    }
}

/// The app's props for these options: compact, never touching the page's URL.
fn props(options: Options, events: &Callback<ViewEvent>, report: &ReportSlot) -> AppProps {
    AppProps {
        urls: Some(options.urls),
        stats: options.stats,
        tensor: options.tensor,
        view: options.view,
        embed: true,
        auto_stats: options.auto_stats.unwrap_or(64_000_000),
        sync_url: false,
        credentials: options.credentials,
        events: events.clone(),
        report: Some(report.clone()),
    }
}

/// The DOM event type of an app event.
fn event_type(event: &ViewEvent) -> &'static str {
    match event {
        ViewEvent::Load { .. } => "bitlens-load",
        ViewEvent::Select { .. } => "bitlens-select",
        ViewEvent::Error { .. } => "bitlens-error",
    }
}

/// An event's `detail`: its fields as a plain object (an externally tagged variant's content).
fn event_detail(event: &ViewEvent) -> JsValue {
    let value = match serde_json::to_value(event) {
        Ok(serde_json::Value::Object(mut map)) if map.len() == 1 => {
            let only = map.keys().next().cloned().unwrap_or_default();
            map.remove(&only).unwrap_or_default()
        }
        Ok(other) => other,
        Err(e) => serde_json::json!({ "message": format!("unencodable event: {e}") }),
    };
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}

/// Sets the URL the app's files (workers, their modules) are found relative to: the embed
/// script's own URL. Call once, before [`mount_view`].
#[wasm_bindgen(js_name = setAssetBase)]
pub fn set_asset_base(url: &str) {
    crate::ui::assets::set_base(url);
}

/// Number of statistics workers running on the page, shared by every view.
#[wasm_bindgen(js_name = poolWorkers)]
pub fn pool_workers() -> usize {
    crate::ui::pool::workers()
}

/// Mounts a view into `root` with the options (JSON, see [`Options`]); its events go to
/// `on_event(type, detail)`.
#[wasm_bindgen(js_name = mountView)]
pub fn mount_view(
    root: Element,
    options: &str,
    on_event: js_sys::Function,
) -> Result<ViewHandle, JsError> {
    let options = Options::parse(options)?;
    options.theme.apply(&root);
    let events = Callback::from(move |e: ViewEvent| {
        let _ = on_event.call2(
            &JsValue::NULL,
            &JsValue::from_str(event_type(&e)),
            &event_detail(&e),
        );
    });
    let report = ReportSlot::default();
    let app =
        yew::Renderer::<App>::with_root_and_props(root.clone(), props(options, &events, &report))
            .render();
    Ok(ViewHandle {
        root,
        app: Some(app),
        events,
        report,
    })
}

/// A mounted view.
#[wasm_bindgen]
pub struct ViewHandle {
    root: Element,
    app: Option<AppHandle<App>>,
    events: Callback<ViewEvent>,
    report: ReportSlot,
}

#[wasm_bindgen]
impl ViewHandle {
    /// Sets every option at once (JSON, see [`Options`]); the view follows live.
    pub fn set(&mut self, options: &str) -> Result<(), JsError> {
        let options = Options::parse(options)?;
        options.theme.apply(&self.root);
        let props = props(options, &self.events, &self.report);
        match self.app.as_mut() {
            Some(app) => {
                app.update(props);
                Ok(())
            }
            None => Err(JsError::new("the view is unmounted")),
        }
    }

    /// The `bitlens inspect --json` document of what the view has loaded (JSON text), with the
    /// statistics computed so far: checkpoints' `files` and `summary`, and `.bls` snapshots'
    /// `snapshots` (each decoded tensor with its statistics); see [`ViewReport`].
    pub fn inspect(&self) -> Result<String, JsError> {
        let report = self.report.0.borrow();
        let text = match report.as_ref() {
            Some(r) => serde_json::to_string(r),
            None => {
                serde_json::to_string(&ViewReport::new(InspectReport::new(Vec::new()), Vec::new()))
            }
        };
        text.map_err(|e| JsError::new(&format!("inspect: {e}")))
    }

    /// Unmounts the view (its workers' tasks stop; the page's last view stops the workers).
    pub fn unmount(&mut self) {
        if let Some(app) = self.app.take() {
            app.destroy();
        }
    }
}
