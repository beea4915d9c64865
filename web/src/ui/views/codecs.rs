//! The Codecs view: compress the active checkpoint into `.bls` snapshots (one per file; codec for
//! the whole checkpoint, optional base checkpoint for deltas, progress with Cancel, sizes, ratio,
//! speed, a download per snapshot and one for the whole set, and the error of lossy tensors), and
//! decompress opened snapshots, one or all (base choice for deltas, download of the original
//! files, the typed error of a corrupt snapshot), and preview snapshots on a server tensor by
//! tensor ([`preview`]). It says which build of the codec module runs (wasm threads or
//! single-threaded, and why). An embed shows no compress panel, and a snapshot (a checkpoint made
//! from its index) is never offered for compression nor as a base.

pub mod inshrink;
pub mod preview;

use crate::model::checkpoint::Checkpoint;
use crate::model::codec::{Preset, SnapshotInfo, PRESETS};
use crate::model::format::{bytes, mbps, mib, number, rate};
use crate::ui::app::codecs::{
    CodecMsg, CodecState, CompressRun, Job, JobKind, Output, PreviewSort, SnapshotFile,
};
use crate::ui::io::download::save_all;
use crate::ui::jobs::now;
use bitlens_protocol::{Build, BuildKind};
use web_sys::HtmlSelectElement;
use yew::prelude::*;

/// What the Codecs view shows: the checkpoints (to compress, as bases) and the codec panel's state.
pub struct Props<'a> {
    /// Loaded checkpoints.
    pub checkpoints: &'a [Checkpoint],
    /// The active checkpoint (the one to compress).
    pub active: Option<&'a Checkpoint>,
    /// The preset for whole files.
    pub preset: &'static Preset,
    /// The base checkpoint chosen for compression.
    pub base: Option<u32>,
    /// The Inshrinkerator preset's error budget.
    pub max_error: f64,
    /// The running codec job.
    pub job: Option<&'a Job>,
    /// How many tensors of the active checkpoint have a codec override.
    pub overrides: usize,
    /// The last compression of the active checkpoint.
    pub compressed: Option<&'a CompressRun>,
    /// The build of the codec worker's module.
    pub build: Option<&'a Build>,
    /// Snapshots opened for decompression.
    pub snapshots: &'a [SnapshotFile],
    /// Shard indexes given with snapshot sets.
    pub snapshot_indexes: &'a [Output],
    /// How remote snapshots' tensor lists are sorted.
    pub preview_sort: (PreviewSort, bool),
    /// In an embed: no compress panel (a hub page shows what it hosts; compressing is the app's).
    pub embed: bool,
}

impl<'a> Props<'a> {
    /// The parts of the codec panel's state the view shows.
    pub fn new(
        checkpoints: &'a [Checkpoint],
        active: Option<&'a Checkpoint>,
        panel: &'a CodecState,
        embed: bool,
    ) -> Self {
        let id = active.map(|c| c.id);
        Props {
            checkpoints,
            active,
            preset: panel.preset(),
            base: panel.base,
            max_error: panel.max_error(),
            job: panel.job.as_ref(),
            overrides: id
                .and_then(|id| panel.overrides.get(&id))
                .map_or(0, |o| o.len()),
            compressed: id.and_then(|id| panel.compressed.get(&id)),
            build: panel.build.as_ref(),
            snapshots: &panel.snapshots,
            snapshot_indexes: &panel.snapshot_indexes,
            preview_sort: panel.preview_sort,
            embed,
        }
    }
}

/// The progress bar of the running codec job, with Cancel.
pub fn job_progress(on: &Callback<CodecMsg>, job: &Job, what: &str) -> Html {
    let fraction = if job.total > 0.0 {
        (job.done / job.total).min(1.0)
    } else {
        0.0
    };
    let secs = (now() - job.started) / 1e3;
    let units = if matches!(job.kind, JobKind::Roundtrip { .. }) {
        format!("{} of {} codecs", job.done, job.total)
    } else {
        format!(
            "{} of {} · {}",
            bytes(job.done as u64),
            bytes(job.total as u64),
            rate(job.done as u64, secs)
        )
    };
    html! {
        <div class="codec-progress" data-state="running" data-done={job.done.to_string()}
             data-total={job.total.to_string()}>
            <div class="bar" role="progressbar" aria-valuemin="0" aria-valuemax="100"
                 aria-valuenow={format!("{:.0}", 100.0 * fraction)}>
                <div class="fill" style={format!("width:{:.2}%", 100.0 * fraction)}></div>
            </div>
            <span class="progress-text">{ format!("{what}: {units}") }</span>
            <button id="codec-cancel" class="button" onclick={on.reform(|_| CodecMsg::Cancel)}>{ "Cancel" }</button>
        </div>
    }
}

/// A download link (a button) for an output file.
pub fn download(id: Option<&str>, class: &str, o: &Output) -> Html {
    html! {
        <a id={id.map(str::to_owned)} class={classes!("button", "primary", "download", class.to_owned())} href={o.url.clone()} download={o.name.clone()}
           data-name={o.name.clone()} data-bytes={o.bytes.to_string()}>{ format!("Download {} ({})", o.name, bytes(o.bytes)) }</a>
    }
}

/// A list of downloads with one button that saves them all.
fn download_set<'a>(id: &str, class: &str, files: impl Iterator<Item = &'a Output>) -> Html {
    let files: Vec<(String, String, u64)> = files
        .map(|o| (o.url.clone(), o.name.clone(), o.bytes))
        .collect();
    let total = files.len();
    let all = files.clone();
    let onclick = Callback::from(move |_: MouseEvent| {
        // A failure here leaves the links below, which work one by one.
        let _ = save_all(all.iter().map(|(u, n, _)| (u.as_str(), n.as_str())));
    });
    html! {
        <div class="download-set" id={id.to_owned()} data-files={total.to_string()}>
            <button class={classes!("button", "primary", format!("{class}-all"))} {onclick}>
                { format!("Download all {total} files") }</button>
            <ul class="downloads">
                { for files.iter().map(|(url, name, size)| html! {
                    <li><a class={classes!("download", class.to_owned())} href={url.clone()} download={name.clone()}
                           data-name={name.clone()}>{ name.clone() }</a>{ format!(" ({})", bytes(*size)) }</li>
                }) }
            </ul>
        </div>
    }
}

/// Which build of the codec module runs, as a line of the panel.
fn build_note(b: Option<&Build>) -> Html {
    let Some(b) = b else {
        return html! { <p id="codec-build" class="note">{ "Codec worker: starting…" }</p> };
    };
    let reason = b.reason.clone().unwrap_or_default();
    let text = if b.kind == BuildKind::Threads {
        format!(
            "Codec worker: wasm threads, PLMC on {} threads (shared memory; the page is cross-origin isolated): {reason}.",
            b.threads
        )
    } else if reason.is_empty() {
        "Codec worker: single-threaded build.".to_owned()
    } else {
        format!("Codec worker: single-threaded build ({reason}).")
    };
    html! {
        <p id="codec-build" class="note" data-build={b.kind.name()} data-threads={b.threads.to_string()}
           data-reason={reason}>{ text }</p>
    }
}

fn compress_panel(on: &Callback<CodecMsg>, s: &Props) -> Html {
    let Some(c) = s.active else {
        return html! { <p class="note">{ "Open a .safetensors checkpoint to compress it." }</p> };
    };
    if c.snapshot.is_some() {
        return html! { <p class="note" data-note="snapshot-active">{ format!("{} is a snapshot: it is restored below. Select a checkpoint to compress it.", c.name) }</p> };
    }
    let id = c.id;
    let preset = s.preset;
    let on_preset = on.reform(|e: Event| {
        let sel: HtmlSelectElement = e.target_unchecked_into();
        CodecMsg::SetPreset(sel.value())
    });
    let on_base = on.reform(|e: Event| {
        let sel: HtmlSelectElement = e.target_unchecked_into();
        CodecMsg::SetBase(sel.value().parse().ok())
    });
    let running = s.job;
    let overrides = s.overrides;
    let run = s.compressed;
    html! {
        <section class="codec-panel" data-panel="compress">
            <h2>{ format!("Compress {}", c.name) }</h2>
            <div class="codec-tools">
                <label>{ "Codec " }
                    <select id="codec-select" onchange={on_preset}>
                        { for PRESETS.iter().map(|p| html! {
                            <option value={p.id} selected={p.id == preset.id}>{ p.label }</option>
                        }) }
                    </select>
                </label>
                if preset.inshrink {
                    { inshrink::budget_input(on, s.max_error) }
                } else {
                <label>{ "Base " }
                    <select id="base-select" onchange={on_base}>
                        <option value="" selected={s.base.is_none()}>{ "none (whole file)" }</option>
                        { for s.checkpoints.iter().filter(|b| b.id != id && b.snapshot.is_none()).map(|b| html! {
                            <option value={b.id.to_string()} selected={s.base == Some(b.id)}>
                                { format!("XOR delta against {}", b.name) }</option>
                        }) }
                    </select>
                </label>
                }
                <button id="compress-button" class="button primary" disabled={running.is_some()}
                        onclick={on.reform(|_| CodecMsg::Compress)}>{ "Compress" }</button>
                if overrides > 0 {
                    <span class="note" data-overrides={overrides.to_string()}>
                        { format!("{overrides} tensor override{} (Detail view){}", if overrides == 1 { "" } else { "s" },
                            if preset.inshrink { " — not used: Inshrinkerator plans the whole file" } else { "" }) }</span>
                }
            </div>
            if preset.inshrink {
                { inshrink::about() }
            } else {
            <p class="note">{ "Runs in a Web Worker, streaming each file in 64 MiB frames; the snapshots are collected as Blobs, never whole in wasm memory. A sharded checkpoint gives one snapshot per shard (<shard>.bls, as bitlens compress INDEX -o DIR), plus its index as it is. With a base, tensors it shares are stored as their XOR with it (LMC) or as BitSnap deltas, each shard against the base's shard of the same name; lossy codecs take no base." }</p>
            }
            { build_note(s.build) }
            if let Some(j) = running.filter(|j| j.kind == JobKind::Compress { ckpt: id }) {
                { job_progress(on, j, "Compressing") }
            }
            if let Some(r) = run {
                { compress_result(r) }
            }
        </section>
    }
}

fn compress_result(r: &CompressRun) -> Html {
    let res = &r.result;
    let ratio = res.out_bytes as f64 / res.in_bytes.max(1) as f64;
    let lossy: Vec<_> = res.entries.iter().filter(|e| e.error.is_some()).collect();
    let (build, threads) = r
        .build
        .as_ref()
        .map_or(("", 0), |b| (b.kind.name(), b.threads));
    html! {
        <div id="compress-result" data-in={res.in_bytes.to_string()} data-out={res.out_bytes.to_string()}
             data-ratio={ratio.to_string()} data-seconds={r.seconds.to_string()}
             data-mbps={format!("{:.1}", mbps(res.in_bytes, r.seconds))} data-preset={r.preset.id} data-lossy={res.lossy.to_string()}
             data-delta={res.delta.to_string()} data-memory={r.memory.to_string()}
             data-files={r.outputs.len().to_string()} data-build={build} data-threads={threads.to_string()}>
            <div class="cards" part="cards">
                <div class="card"><div class="card-label">{ "in" }</div><div class="card-value">{ bytes(res.in_bytes) }</div></div>
                <div class="card"><div class="card-label">{ "out" }</div><div class="card-value">{ bytes(res.out_bytes) }</div></div>
                <div class="card"><div class="card-label">{ "ratio (out / in)" }</div><div class="card-value">{ format!("{ratio:.4}") }</div></div>
                <div class="card"><div class="card-label">{ "speed" }</div><div class="card-value">{ rate(res.in_bytes, r.seconds) }</div></div>
            </div>
            <p>
                { format!("{} in {:.2} s{}. ", r.preset.label, r.seconds,
                    r.base.as_ref().map_or(String::new(), |b| format!(", XOR delta against {b}"))) }
                if !r.sharded {
                    { download(Some("compress-download"), "compress-download", &r.outputs[0]) }
                }
            </p>
            if r.sharded {
                <p class="note">{ format!("{} snapshots, one per shard{}: keep them in one folder; bitlens decompress FOLDER -o OUT restores the checkpoint.",
                    r.outputs.len(), if r.index.is_some() { ", and the shard index as it is" } else { "" }) }</p>
                { download_set("compress-downloads", "compress-download", r.outputs.iter().chain(&r.index)) }
            }
            <p class="note">{ format!("Per-tensor ratios are in the Tensors view (achieved ratio). Wasm memory of the codec worker: {}.",
                mib(r.memory)) }</p>
            if let Some(i) = &res.inshrink {
                { inshrink::plan(i) }
            }
            if !lossy.is_empty() {
                <h3>{ "Error of the lossy tensors" }</h3>
                <div class="table-scroll" part="table">
                <table id="error-table">
                    <thead><tr><th>{ "tensor" }</th><th>{ "codec" }</th><th class="num">{ "ratio" }</th>
                        <th class="num">{ "MSE" }</th><th class="num">{ "max abs" }</th>
                        <th class="num">{ "max rel" }</th><th class="num">{ "mean rel" }</th></tr></thead>
                    <tbody>
                        { for lossy.iter().map(|e| {
                            let er = e.error.expect("filtered");
                            html! {
                                <tr data-name={e.name.clone()} data-mse={er.mse.to_string()} data-max-rel={er.max_rel.to_string()}>
                                    <td class="name">{ &e.name }</td><td>{ &e.codec }</td>
                                    <td class="num">{ format!("{:.4}", e.ratio) }</td>
                                    <td class="num">{ number(er.mse, 3) }</td>
                                    <td class="num">{ number(er.max_abs, 3) }</td>
                                    <td class="num">{ number(er.max_rel, 3) }</td>
                                    <td class="num">{ number(er.mean_rel, 3) }</td>
                                </tr>
                            }
                        }) }
                    </tbody>
                </table>
                </div>
            }
        </div>
    }
}

/// A snapshot's index in one line: tensors, sizes, ratio, lossy, delta.
pub fn snapshot_meta(i: &SnapshotInfo) -> String {
    format!(
        "{} tensors · {} → {} original (ratio {:.4}){}{}",
        i.entries.len(),
        bytes(i.size),
        bytes(i.original_size),
        i.size as f64 / i.original_size.max(1) as f64,
        if i.lossy { " · lossy" } else { "" },
        if i.delta {
            " · XOR delta: needs its base checkpoint"
        } else {
            ""
        }
    )
}

/// The choice of a delta snapshot's base among the loaded checkpoints.
pub fn base_select(on: &Callback<CodecMsg>, checkpoints: &[Checkpoint], f: &SnapshotFile) -> Html {
    let snap = f.id;
    let on_base = on.reform(move |e: Event| {
        let sel: HtmlSelectElement = e.target_unchecked_into();
        CodecMsg::SnapshotBase(snap, sel.value().parse().ok())
    });
    html! {
        <label>{ "Base " }
            <select class="snapshot-base" onchange={on_base}>
                <option value="" selected={f.base.is_none()}>{ "choose a loaded checkpoint…" }</option>
                { for checkpoints.iter().filter(|c| c.snapshot.is_none()).map(|c| html! {
                    <option value={c.id.to_string()} selected={f.base == Some(c.id)}>{ c.name.clone() }</option>
                }) }
            </select>
        </label>
    }
}

fn snapshots_panel(on: &Callback<CodecMsg>, s: &Props) -> Html {
    if s.snapshots.is_empty() {
        return html! {
            <section class="codec-panel" data-panel="snapshots">
                <h2>{ "Decompress" }</h2>
                <p class="note">{ "Open or drop .bls snapshots (files are recognised by their BITLENS magic) to restore the original .safetensors files; for a shard set, give the folder bitlens compress wrote (snapshots and index)." }</p>
            </section>
        };
    }
    let first_remote = s
        .snapshots
        .iter()
        .find(|f| f.remote().is_some())
        .map(|f| f.id);
    let local = s.snapshots.iter().filter(|f| f.remote().is_none()).count();
    let running = s.job;
    let decompressing = running.filter(|j| matches!(j.kind, JobKind::Decompress { .. }));
    let restored: Vec<&Output> = s
        .snapshots
        .iter()
        .filter_map(|f| f.output.as_ref())
        .collect();
    html! {
        <section class="codec-panel" data-panel="snapshots">
            <h2>{ "Decompress" }</h2>
            if local > 1 {
                <div class="codec-tools">
                    <button id="decompress-all" class="button primary" disabled={running.is_some()}
                            onclick={on.reform(|_| CodecMsg::DecompressAll)}>
                        { format!("Decompress all {local} snapshots") }</button>
                    <span class="note">{ "one after another; deltas need their base chosen below" }</span>
                </div>
            }
            if let Some(j) = decompressing {
                { job_progress(on, j, "Decompressing") }
            }
            if !s.snapshot_indexes.is_empty() && restored.len() <= 1 {
                <p class="note snapshot-indexes">{ "Shard index, restored as it is: " }
                    { for s.snapshot_indexes.iter().map(|o| download(None, "snapshot-index-download", o)) }</p>
            }
            if restored.len() > 1 {
                { download_set("decompress-downloads", "restored-download", restored.iter().copied().chain(s.snapshot_indexes)) }
            }
            { for s.snapshots.iter().map(|f| {
                if f.remote().is_some() {
                    return preview::remote_snapshot(on, s, f, first_remote == Some(f.id));
                }
                let snap = f.id;
                let info = f.info.as_ref();
                html! {
                    <div class="snapshot" data-name={f.name.clone()} data-id={snap.to_string()}
                         data-delta={info.map(|i| i.delta.to_string())} data-lossy={info.map(|i| i.lossy.to_string())}>
                        <h3>{ &f.name }</h3>
                        if let Some(i) = info {
                            <p class="meta">{ snapshot_meta(i) }</p>
                            if let Some(ins) = &i.inshrink {
                                { inshrink::plan(ins) }
                            }
                            if i.delta {
                                { base_select(on, s.checkpoints, f) }
                            }
                            <button class="button primary decompress-button"
                                    disabled={running.is_some() || (i.delta && f.base.is_none())}
                                    onclick={on.reform(move |_| CodecMsg::Decompress(snap))}>{ "Decompress" }</button>
                        } else if f.error.is_none() {
                            <p class="meta">{ "Reading the index…" }</p>
                        }
                        if let Some(e) = &f.error {
                            <p class="snapshot-error">{ e.clone() }</p>
                        }
                        if let Some(o) = &f.output {
                            <p class="decompressed" data-seconds={o.seconds.to_string()} data-memory={o.memory.to_string()}>
                                { format!("Restored {} in {:.2} s ({}), every checksum verified. ", bytes(o.bytes), o.seconds, rate(o.bytes, o.seconds)) }
                                { download(None, "decompress-download", o) }
                            </p>
                        }
                    </div>
                }
            }) }
        </section>
    }
}

/// The Codecs view.
pub fn view(on: &Callback<CodecMsg>, s: &Props) -> Html {
    html! {
        <section class="codecs" data-view="codecs">
            if !s.embed {
                { compress_panel(on, s) }
            }
            { snapshots_panel(on, s) }
        </section>
    }
}
