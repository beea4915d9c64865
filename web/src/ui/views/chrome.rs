//! The page around the views: header with the open / demo buttons and the URL box, errors (with
//! the offer to read a small file whole when its server ignores `Range`, and Retry for a URL that
//! could not be opened), the progress bar with
//! Cancel, the button that starts a large remote checkpoint's statistics, the first-visit welcome
//! panel, the list of loaded checkpoints, and the tabs.
//!
//! The main regions carry `part` names, so a page embedding `<bitlens-view>` can style them on
//! purpose with `::part()` (docs/EMBED.md lists them): `header`, `errors`, `error`, `retry`,
//! `notes`, `status`, `checkpoints`, `tabs`, `tab`, `panel` (the views add theirs).

use crate::model::checkpoint::Checkpoint;
use crate::model::format::{bytes, count, mib, rate};
use crate::ui::app::{App, Msg, Tab};
use crate::ui::io::files;
use crate::ui::jobs::{mark, now, Jobs};
use crate::ui::loader::LoadError;
use web_sys::{HtmlInputElement, SubmitEvent};
use yew::html::Scope;
use yew::prelude::*;

/// Callback for a file `<input>`: hands its files to the app and clears it.
fn on_pick(link: &Scope<App>) -> Callback<Event> {
    let link = link.clone();
    Callback::from(move |e: Event| {
        let given = now();
        mark("bitlens:files-given");
        let input: HtmlInputElement = e.target_unchecked_into();
        let picked = files::from_input(&input);
        input.set_value("");
        link.send_message(Msg::Given(picked, given));
    })
}

/// A form to open checkpoints by URL (`id`: the input's id): `*.safetensors`, a shard index, or a
/// `.bls` snapshot; several URLs separated by spaces.
fn url_box(link: &Scope<App>, id: &'static str) -> Html {
    let link = link.clone();
    let onsubmit = Callback::from(move |e: SubmitEvent| {
        e.prevent_default();
        let form: web_sys::HtmlFormElement = e.target_unchecked_into();
        let Some(input) = form
            .query_selector("input")
            .ok()
            .flatten()
            .and_then(|i| wasm_bindgen::JsCast::dyn_into::<HtmlInputElement>(i).ok())
        else {
            return;
        };
        // Several URLs (separated by spaces) open as checkpoints to compare.
        let urls = input
            .value()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        input.set_value("");
        link.send_message(Msg::OpenUrls(urls));
    });
    html! {
        <form class="url-box" {onsubmit}>
            <input {id} type="text" inputmode="url" spellcheck="false" placeholder="https://…/model.safetensors, …index.json or .bls (several: space-separated)"
                   title="Open a checkpoint by URL: read with Range requests, nothing is downloaded whole" />
            <button type="submit" class="button">{ "Open URL" }</button>
        </form>
    }
}

/// The header: title, privacy note and the open / demo buttons (`loading`: a load is in progress;
/// `has_content`: something is open, so it can be closed).
pub fn header(link: &Scope<App>, loading: bool, has_content: bool) -> Html {
    let demo = link.callback(|_| Msg::Demo);
    let clear = link.callback(|_| Msg::Clear);
    html! {
        <header class="top" part="header">
            <div class="brand">
                <h1>{ "bitlens" }</h1>
                <span class="tagline">{ "Look inside model checkpoints (safetensors, GGUF, PyTorch, NumPy) — in your browser, nothing is uploaded." }</span>
            </div>
            <div class="actions">
                <label class="button" title="One or more checkpoint files (safetensors, GGUF, PyTorch, NumPy), a shard index with its shards, or .bls snapshots">
                    { "Open files…" }
                    <input id="file-input" type="file" multiple=true accept={accepted_files()}
                           onchange={on_pick(link)} />
                </label>
                <label class="button" title="A checkpoint directory, or a directory of checkpoints">
                    { "Open folder…" }
                    <input id="dir-input" type="file" webkitdirectory=true onchange={on_pick(link)} />
                </label>
                { url_box(link, "url-input") }
                <a id="learn-link" class="button" href="#learn/float"
                   title="Lessons: floats, Huffman, rANS — on real tensors">{ "Learn" }</a>
                <button id="demo-button" class="button" onclick={demo} disabled={loading}>{ "Load demo" }</button>
                if has_content {
                    <button class="button subtle" onclick={clear}>{ "Close all" }</button>
                }
            </div>
        </header>
    }
}

/// One line per file that could not be loaded or analysed; `offers`: URLs that may be read whole
/// (a small file whose server ignores `Range`), each with a button; `retries`: URLs that may be
/// opened again, each with a Retry button.
pub fn errors(
    link: &Scope<App>,
    errors: &[LoadError],
    offers: &[String],
    retries: &[String],
) -> Html {
    if errors.is_empty() {
        return Html::default();
    }
    html! {
        <section class="errors" role="alert" part="errors">
            { for errors.iter().enumerate().map(|(i, e)| html! {
                <div class="error" part="error" data-file={e.file.clone()}>
                    <strong class="error-file">{ &e.file }</strong>
                    <span class="error-reason">{ format!(": {}", e.reason) }</span>
                    if offers.contains(&e.file) {
                        <button class="button download-whole" onclick={
                            let url = e.file.clone();
                            link.callback(move |_| Msg::DownloadWhole(url.clone()))
                        }>{ "Download the whole file instead" }</button>
                    }
                    if retries.contains(&e.file) {
                        <button class="button retry" part="retry" onclick={
                            let url = e.file.clone();
                            link.callback(move |_| Msg::Retry(url.clone()))
                        }>{ "Retry" }</button>
                    }
                    <button class="dismiss" title="Dismiss" onclick={link.callback(move |_| Msg::Dismiss(i))}>{ "×" }</button>
                </div>
            }) }
        </section>
    }
}

/// This page's own wasm memory in bytes (the main-thread module; workers report theirs).
fn main_memory() -> u64 {
    core::arch::wasm32::memory_size::<0>() as u64 * 65_536
}

/// Notes that are no errors (a remote file's statistics taken from its sidecar, or its sidecar
/// ignored and why).
pub fn notes(notes: &[String]) -> Html {
    if notes.is_empty() {
        return Html::default();
    }
    html! {
        <section class="notes" part="notes">
            { for notes.iter().map(|n| html! { <p class="note sidecar-note">{ n }</p> }) }
        </section>
    }
}

/// The progress bar (bytes done / total) with Cancel, or the result line of the last run; and how
/// long the last load took to show its tensor table (`table_ms`).
pub fn progress(
    link: &Scope<App>,
    loading: bool,
    table_ms: Option<f64>,
    jobs: &Jobs,
    workers: usize,
) -> Html {
    let timing = table_ms.map(|ms| {
        html! { <span class="timing" data-table-ms={format!("{ms:.1}")}>{ format!("Tensor table shown {ms:.0} ms after the files were given. ") }</span> }
    });
    if loading {
        return html! { <section class="progress" part="status" data-state="loading"><span>{ "Reading headers…" }</span></section> };
    }
    if jobs.total == 0 {
        return html! { <section class="progress" part="status" data-state="idle">{ timing.unwrap_or_default() }</section> };
    }
    let fraction = if jobs.total == 0 {
        1.0
    } else {
        jobs.done as f64 / jobs.total as f64
    };
    let secs = jobs.seconds();
    let state = if jobs.running() {
        "running"
    } else if jobs.cancelled {
        "cancelled"
    } else {
        "done"
    };
    let text = match state {
        "running" => format!(
            "Analysing in {workers} workers: {} of {} · {}",
            bytes(jobs.done),
            bytes(jobs.total),
            rate(jobs.done, secs)
        ),
        "cancelled" => format!(
            "Cancelled after {} of {}.",
            bytes(jobs.done),
            bytes(jobs.total)
        ),
        _ => format!(
            "Analysed {} in {:.2} s ({}) with {workers} workers; peak wasm memory per worker {}.",
            bytes(jobs.done),
            secs,
            rate(jobs.done, secs),
            mib(jobs.memory_max)
        ),
    };
    html! {
        <section class="progress" part="status" data-state={state} data-done={jobs.done.to_string()}
                 data-total={jobs.total.to_string()} data-seconds={format!("{secs:.4}")}
                 data-memory={jobs.memory_max.to_string()} data-main-memory={main_memory().to_string()}>
            <div class="bar" role="progressbar" aria-valuemin="0" aria-valuemax="100"
                 aria-valuenow={format!("{:.0}", 100.0 * fraction)}>
                <div class="fill" style={format!("width:{:.2}%", 100.0 * fraction)}></div>
            </div>
            <span class="progress-text">{ text }</span>
            if state == "running" {
                <button id="cancel-button" class="button" onclick={link.callback(|_| Msg::Cancel)}>{ "Cancel" }</button>
            }
            if state == "cancelled" {
                <button id="resume-button" class="button" onclick={link.callback(|_| Msg::Resume)}>{ "Resume" }</button>
            }
            { timing.unwrap_or_default() }
        </section>
    }
}

/// The button that starts the whole-model statistics of a large remote checkpoint.
pub fn stats_button(link: &Scope<App>, c: &Checkpoint) -> Html {
    let id = c.id;
    let missing = c.rows.len() - c.done;
    html! {
        <section class="stats-wait" part="status">
            <span>{ format!("{} is remote and large: statistics of a tensor are computed when you select it; the whole model waits for you.", c.name) }</span>
            <button id="stats-all" class="button primary" onclick={link.callback(move |_| Msg::AllowStats(id))}>
                { format!("Compute statistics for all {missing} tensors ({})", bytes(c.data_bytes())) }
            </button>
        </section>
    }
}

/// The first-visit panel: what the app does and the demo button.
pub fn welcome(link: &Scope<App>, loading: bool) -> Html {
    html! {
        <section class="welcome">
            <div class="dropzone">
                <p class="big">{ "Drop checkpoints here" }</p>
                <p>{ "One or more checkpoint files (.safetensors, .gguf, PyTorch .pt / .bin, NumPy .npy / .npz), a sharded checkpoint (its *.safetensors.index.json with the shards), bitlens .bls snapshots, or whole folders. Several checkpoints of one model are compared step by step." }</p>
                <p>{ "Headers are read first, so the tensor table appears at once; the data is then streamed in 4 MiB windows through Web Workers running the bitlens core compiled to WebAssembly. Files never leave your machine." }</p>
                <button id="demo-button-big" class="button primary" disabled={loading}
                        onclick={link.callback(|_| Msg::Demo)}>{ "Try the demo: three steps of a real MiniLM checkpoint" }</button>
                <p>{ "Or open a hosted checkpoint by URL (the server must allow Range requests and CORS):" }</p>
                { url_box(link, "url-input-big") }
            </div>
        </section>
    }
}

/// The loaded checkpoints, in compare order: select, or remove (`removable`).
pub fn checkpoints(
    link: &Scope<App>,
    checkpoints: &[Checkpoint],
    active: Option<u32>,
    removable: bool,
) -> Html {
    let selected = active;
    html! {
        <nav class="checkpoints" part="checkpoints">
            { for checkpoints.iter().enumerate().map(|(i, c)| {
                let id = c.id;
                let active = selected == Some(id);
                let status = if c.snapshot.is_some() {
                    format!("snapshot · {}/{} tensors decoded", c.done, c.rows.len())
                } else if c.complete() {
                    "analysed".to_owned()
                } else {
                    format!("{}/{} tensors", c.done, c.rows.len())
                };
                html! {
                    <div class={classes!("checkpoint", active.then_some("active"))} data-id={id.to_string()}>
                        <button class="select" onclick={link.callback(move |_| Msg::Select(id))}>
                            <span class="step">{ format!("#{}", i + 1) }</span>
                            <span class="name" title={c.name.clone()}>{ &c.name }</span>
                            <span class="meta">{ format!("{} file{} · {} · {} params · {status}",
                                c.files.len(), if c.files.len() == 1 { "" } else { "s" },
                                bytes(c.file_bytes()), count(c.params())) }</span>
                        </button>
                        if removable {
                            <button class="remove" title="Remove" onclick={link.callback(move |_| Msg::Remove(id))}>{ "×" }</button>
                        }
                    </div>
                }
            }) }
        </nav>
    }
}

/// The view tabs (`open`: the open one; `checkpoints`: how many are loaded).
pub fn tabs(link: &Scope<App>, open: Tab, checkpoints: usize) -> Html {
    let tab = |t: Tab, label: &'static str, enabled: bool| {
        let current = open == t;
        html! {
            <button class={classes!("tab", current.then_some("current"))} data-tab={label.to_lowercase()}
                    part={if current { "tab current-tab" } else { "tab" }} role="tab" aria-selected={current.to_string()}
                    disabled={!enabled} onclick={link.callback(move |_| Msg::Tab(t))}>{ label }</button>
        }
    };
    html! {
        <div class="tabs" role="tablist" part="tabs">
            { tab(Tab::Summary, "Summary", true) }
            { tab(Tab::Tensors, "Tensors", true) }
            { tab(Tab::Detail, "Detail", true) }
            { tab(Tab::Values, "Values", true) }
            { tab(Tab::Compare, "Compare", checkpoints >= 2) }
            { tab(Tab::Codecs, "Codecs", true) }
        </div>
    }
}

/// The file picker's `accept` list: every checkpoint extension, shard indexes (`.json`) and
/// snapshots ([`bitlens_tensors::naming`]).
fn accepted_files() -> String {
    use bitlens_tensors::naming::{CHECKPOINT_EXTENSIONS, SNAPSHOT_EXTENSION};
    let mut exts = vec!["safetensors", "json", SNAPSHOT_EXTENSION];
    exts.extend(
        CHECKPOINT_EXTENSIONS
            .iter()
            .filter(|e| **e != "safetensors"),
    );
    exts.iter()
        .map(|e| format!(".{e}"))
        .collect::<Vec<_>>()
        .join(",")
}
