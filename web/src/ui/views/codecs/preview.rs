//! The preview of a snapshot on a server (opened by URL: `?url=`, the URL box), in the Codecs
//! view: the snapshot's tensors (codec, stored and original sizes, ratio; sortable), and for the tensor
//! chosen its decoding (progress), its statistics — exact values in `data-*` attributes, and the
//! Detail view's charts — and its one-tensor `.safetensors` file to download. A failed decoding
//! (a checksum mismatch names the tensor) is shown in place.

use crate::model::codec::EntryInfo;
use crate::model::format::{bytes, count, number, percent};
use crate::ui::app::codecs::{CodecMsg, JobKind, PreviewSort, SnapshotFile, TensorPreview};
use crate::ui::views::codecs::{base_select, download, job_progress, snapshot_meta, Props};
use crate::ui::views::detail::stats_charts;
use bitlens_protocol::DecodedTensor;
use yew::prelude::*;

/// The entries in the order of `sort` (column, descending).
fn sorted(entries: &[EntryInfo], sort: (PreviewSort, bool)) -> Vec<&EntryInfo> {
    let mut rows: Vec<&EntryInfo> = entries.iter().collect();
    let (col, desc) = sort;
    match col {
        PreviewSort::Order => {}
        PreviewSort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        PreviewSort::Codec => rows.sort_by(|a, b| a.codec.cmp(&b.codec)),
        PreviewSort::Stored => rows.sort_by_key(|e| e.stored_bytes),
        PreviewSort::Original => rows.sort_by_key(|e| e.bytes),
        PreviewSort::Ratio => rows.sort_by(|a, b| a.ratio.total_cmp(&b.ratio)),
    }
    if desc {
        rows.reverse();
    }
    rows
}

/// A remote snapshot: its tensors and the preview of the one chosen (for a delta, with the choice
/// of its base among the loaded checkpoints). `first`: the first remote snapshot of the page (it
/// gets the `#snapshot-preview` id).
pub fn remote_snapshot(on: &Callback<CodecMsg>, s: &Props, f: &SnapshotFile, first: bool) -> Html {
    let (job, sort) = (s.job, s.preview_sort);
    let Some(remote) = f.remote() else {
        return Html::default();
    };
    let snap = f.id;
    let head = |col: PreviewSort, key: &'static str, label: &str, num: bool| {
        let arrow = match sort {
            (c, true) if c == col => " ▼",
            (c, false) if c == col => " ▲",
            _ => "",
        };
        html! {
            <th class={classes!("sortable", num.then_some("num"))} data-sort={key}
                onclick={on.reform(move |_| CodecMsg::SortPreview(col))}>{ format!("{label}{arrow}") }</th>
        }
    };
    let labels = ["#", "tensor", "codec", "stored", "original", "ratio"];
    let decoding =
        job.filter(|j| matches!(&j.kind, JobKind::DecodeTensor { snap: s, .. } if *s == snap));
    let info = f.info.as_ref();
    html! {
        <div class="snapshot snapshot-preview" id={first.then_some("snapshot-preview")} data-name={f.name.clone()}
             data-id={snap.to_string()} data-url={remote.url.clone()} data-size={remote.size.to_string()}
             data-tensors={info.map(|i| i.entries.len().to_string())}
             data-delta={info.map(|i| i.delta.to_string())} data-lossy={info.map(|i| i.lossy.to_string())}>
            <h3>{ &f.name }</h3>
            <p class="meta">{ &remote.url }</p>
            if let Some(i) = info {
                <p class="meta">{ snapshot_meta(i) }</p>
                if i.delta {
                    { base_select(on, s.checkpoints, f) }
                }
                if let Some(j) = decoding {
                    { job_progress(on, j, "Decoding") }
                }
                if let Some(p) = &f.preview {
                    { tensor_preview(p) }
                }
                <div class="table-scroll">
                <table class="preview-table">
                    <thead><tr>
                        { for PreviewSort::ALL.iter().zip(labels).enumerate().map(|(n, (&(col, key), label))| head(col, key, label, n == 0 || n > 2)) }
                        <th></th>
                    </tr></thead>
                    <tbody>
                        { for sorted(&i.entries, sort).into_iter().map(|e| {
                            let order = i.entries.iter().position(|x| x.name == e.name).unwrap_or(0);
                            let tensor = e.name.clone();
                            let chosen = f.preview.as_ref().is_some_and(|p| p.tensor == e.name);
                            html! {
                                <tr data-tensor={e.name.clone()} data-codec={e.codec.clone()} data-stored={e.stored_bytes.to_string()}
                                    data-original={e.bytes.to_string()} data-ratio={e.ratio.to_string()} data-delta={e.delta.to_string()}
                                    class={classes!(chosen.then_some("chosen"))}>
                                    <td class="num">{ order }</td>
                                    <td class="name">{ &e.name }</td>
                                    <td>{ &e.codec }{ if e.lossy { html! { <span class="tag">{ "lossy" }</span> } } else { Html::default() } }</td>
                                    <td class="num">{ bytes(e.stored_bytes) }</td>
                                    <td class="num">{ bytes(e.bytes) }</td>
                                    <td class="num">{ format!("{:.4}", e.ratio) }</td>
                                    <td><button class="button decode-tensor" disabled={job.is_some()}
                                                onclick={on.reform(move |_| CodecMsg::PreviewTensor(snap, tensor.clone()))}>{ "Preview" }</button></td>
                                </tr>
                            }
                        }) }
                    </tbody>
                </table>
                </div>
            } else if f.error.is_none() {
                <p class="meta">{ "Reading the index…" }</p>
            }
            if let Some(e) = &f.error {
                <p class="snapshot-error">{ e.clone() }</p>
            }
        </div>
    }
}

/// The chosen tensor: its decoding's error, or its sizes, statistics, charts and download.
fn tensor_preview(p: &TensorPreview) -> Html {
    if let Some(e) = &p.error {
        return html! {
            <div class="tensor-preview" data-tensor={p.tensor.clone()} data-state="failed">
                <p class="preview-error snapshot-error">{ e.clone() }</p>
            </div>
        };
    }
    let Some(r) = &p.result else {
        return html! {
            <div class="tensor-preview" data-tensor={p.tensor.clone()} data-state="running">
                <p class="meta">{ format!("Decoding {}…", p.tensor) }</p>
            </div>
        };
    };
    let st = &r.stats;
    let v = st.values.as_ref();
    let f = st.float.as_ref();
    let exact = |x: Option<f64>| x.map(|x| x.to_string());
    html! {
        <div class="tensor-preview" data-tensor={r.name.clone()} data-state="done" data-codec={r.codec.clone()}
             data-stored={r.stored_bytes.to_string()} data-original={r.bytes.to_string()}
             data-file-bytes={r.file_bytes.to_string()} data-fetched={r.fetched.to_string()}
             data-dtype={st.dtype.to_string()} data-lanes={st.lanes.to_string()}
             data-byte-entropy={st.byte_entropy.to_string()} data-predicted-bytes={st.predicted_bytes.to_string()}
             data-min={exact(v.and_then(|v| v.min))} data-max={exact(v.and_then(|v| v.max))}
             data-mean={exact(v.and_then(|v| v.mean))} data-std={exact(v.and_then(|v| v.std))}
             data-zeros={v.map(|v| v.zeros.to_string())} data-nan={v.map(|v| v.nan.to_string())}
             data-sign-entropy={f.map(|f| f.sign_entropy.to_string())}
             data-exponent-entropy={f.map(|f| f.exponent_entropy.to_string())}
             data-mantissa-entropy={f.map(|f| f.mantissa_entropy.to_string())}>
            <h4>{ &r.name }</h4>
            { facts(r) }
            if let Some(o) = &p.output {
                <p>{ download(Some("tensor-download"), "tensor-download", o) }</p>
            }
            { stats_charts(st) }
        </div>
    }
}

/// What the decoding gave, in words.
fn facts(r: &DecodedTensor) -> Html {
    let st = &r.stats;
    html! {
        <p class="meta">{ format!(
            "{} · {} values · {} stored as {} in {} ({:.4}), checksum verified · fetched {} ({} of the tensor's stored bytes) · byte entropy {} bits/byte",
            st.dtype, count(st.lanes), bytes(r.bytes), r.codec, bytes(r.stored_bytes),
            r.stored_bytes as f64 / r.bytes.max(1) as f64, bytes(r.fetched),
            percent(r.fetched as f64 / r.stored_bytes.max(1) as f64), number(st.byte_entropy, 4)) }</p>
    }
}
