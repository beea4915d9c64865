//! What Summary and Detail add for a `.bls` snapshot (a checkpoint made from its index,
//! [`crate::model::snapshot`]): in Summary, its sizes and the bytes per codec; in Detail, the
//! tensor's codec, stored bytes, ratio and lossy error, its decoding (progress, or why it failed)
//! and the one-tensor `.safetensors` file it decoded to — in place of a checkpoint's codec
//! choice and comparison.

use crate::model::checkpoint::Checkpoint;
use crate::model::format::{bytes, number, percent};
use crate::model::snapshot::Snapshot;
use crate::ui::app::codecs::{CodecMsg, CodecState, JobKind};
use crate::ui::views::codecs::{download, job_progress};
use yew::prelude::*;

/// The snapshot part of the Summary: sizes, then tensors and bytes per codec.
pub fn summary(c: &Checkpoint, s: &Snapshot) -> Html {
    let r = &s.report;
    let mix = s.codec_mix();
    html! {
        <div class="snapshot-summary" data-section="snapshot" data-size={r.snapshot_size.to_string()}
             data-original={r.original_size.to_string()} data-ratio={r.ratio.to_string()}
             data-lossy={r.lossy.to_string()} data-delta={r.delta.to_string()}>
            <p class="note">{ format!("A bitlens snapshot: {} stored for a {} original file (ratio {:.4}){}{}. Its tensors are listed from its index; each one's statistics come from decoding it ({} of {} decoded so far).",
                bytes(r.snapshot_size), bytes(r.original_size), r.ratio,
                if r.lossy { ", lossy" } else { "" },
                if r.delta { ", an XOR delta: decoding needs its base checkpoint" } else { "" },
                c.done, c.rows.len()) }</p>
            <table class="codec-mix">
                <thead><tr><th>{ "codec" }</th><th class="num">{ "tensors" }</th><th class="num">{ "original" }</th>
                    <th class="num">{ "stored" }</th><th class="num">{ "ratio" }</th><th class="num">{ "max rel. error" }</th></tr></thead>
                <tbody>
                    { for mix.iter().map(|m| html! {
                        <tr data-codec={m.codec.clone()} data-tensors={m.tensors.to_string()}
                            data-bytes={m.bytes.to_string()} data-stored={m.stored_bytes.to_string()}>
                            <td>{ &m.codec }</td>
                            <td class="num">{ m.tensors }</td>
                            <td class="num">{ bytes(m.bytes) }</td>
                            <td class="num">{ bytes(m.stored_bytes) }</td>
                            <td class="num">{ format!("{:.4}", m.stored_bytes as f64 / m.bytes.max(1) as f64) }</td>
                            <td class="num">{ m.max_rel.map_or("exact".into(), |e| number(e, 3)) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </div>
    }
}

/// The snapshot part of Detail for row `row`: how it is stored, its decoding, its download.
pub fn detail(on: &Callback<CodecMsg>, codecs: &CodecState, s: &Snapshot, row: usize) -> Html {
    let Some(t) = s.tensor(row) else {
        return Html::default();
    };
    let preview = codecs
        .snapshots
        .iter()
        .find(|f| f.id == s.snap)
        .and_then(|f| f.preview.as_ref())
        .filter(|p| p.tensor == t.name);
    let decoding = codecs.job.as_ref().filter(|j| {
        matches!(&j.kind, JobKind::DecodeTensor { snap, tensor } if *snap == s.snap && *tensor == t.name)
    });
    let error = t.error.as_ref();
    html! {
        <div class="snapshot-tensor" data-panel="snapshot-tensor" data-codec={t.codec.clone()}
             data-stored={t.stored_bytes.to_string()} data-original={t.bytes.to_string()}
             data-ratio={t.ratio.to_string()} data-frames={t.frames.to_string()}
             data-max-rel={error.map(|e| e.max_rel.to_string())}>
            <p class="meta">{ format!("Stored with {}{}: {} of {} ({:.4}, {} saved) in {} frame{}",
                t.codec, if t.delta { " as an XOR delta" } else { "" }, bytes(t.stored_bytes), bytes(t.bytes), t.ratio,
                percent(1.0 - t.ratio), t.frames, if t.frames == 1 { "" } else { "s" }) }
                if let Some(e) = error {
                    { format!("; lossy: MSE {}, max abs {}, max rel {}, mean rel {}", number(e.mse, 3),
                        number(e.max_abs, 3), number(e.max_rel, 3), number(e.mean_rel, 3)) }
                }
                { ". Its statistics below are of its decoded bytes." }
            </p>
            if let Some(j) = decoding {
                { job_progress(on, j, "Decoding") }
            }
            if let Some(e) = preview.and_then(|p| p.error.as_ref()) {
                <p class="snapshot-error preview-error">{ e.clone() }</p>
            }
            if let Some(o) = preview.and_then(|p| p.output.as_ref()) {
                <p>{ download(Some("snapshot-tensor-download"), "tensor-download", o) }</p>
            }
        </div>
    }
}
