//! The tensor table's rows as HTML (`ui::views::table::rows` parses them into the table's
//! `<tbody>`s): one `<tr>` per tensor with its exact numbers in `data-*` attributes (for tests and
//! copy-paste) and rounded values in its cells. Every value that comes from a file (a tensor's
//! name, a shard's path) or from a codec is escaped, so a file's names never become markup.

use crate::model::checkpoint::Checkpoint;
use crate::model::format::{bytes, count, groups, number, shape};
use crate::model::snapshot::Snapshot;
use bitlens_protocol::EntryInfo;
use bitlens_stats::TensorStats;
use std::fmt::Write;

/// The last compression's entry of a tensor, by name (the achieved ratio column).
pub type Compressed<'a> = &'a dyn Fn(&str) -> Option<&'a EntryInfo>;

/// The `<tr>` of each row of `c` in `order`, as HTML; the achieved ratios from `compressed`, the
/// last compression (a snapshot shows its own index instead).
pub fn rows_html<'a>(c: &'a Checkpoint, order: &[usize], compressed: Compressed<'a>) -> String {
    let mut out = String::with_capacity(order.len() * 1024);
    for &i in order {
        row(&mut out, c, i, compressed);
    }
    out
}

/// Appends `s` with `&`, `<`, `>`, `"` and `'` escaped (text and attribute values alike).
fn escape(out: &mut String, s: &str) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
}

/// Appends ` name="value"` when there is a value.
fn attr(out: &mut String, name: &str, value: Option<&str>) {
    if let Some(v) = value {
        let _ = write!(out, " {name}=\"");
        escape(out, v);
        out.push('"');
    }
}

/// Appends `<td class="class" title="title">text</td>` (no class or title when empty / none).
fn cell(out: &mut String, class: &str, title: Option<&str>, text: &str) {
    out.push_str("<td");
    attr(out, "class", (!class.is_empty()).then_some(class));
    attr(out, "title", title);
    out.push('>');
    escape(out, text);
    out.push_str("</td>");
}

/// Appends row `i` of `c`.
fn row<'a>(out: &mut String, c: &'a Checkpoint, i: usize, compressed: Compressed<'a>) {
    let r = &c.rows[i];
    let snapshot: Option<&Snapshot> = c.snapshot.as_deref();
    // A snapshot's own index entry, else the last compression's.
    let achieved = match snapshot {
        Some(snap) => snap.entry(i),
        None => compressed(&r.name),
    };
    let err = achieved.and_then(|e| e.error);
    // With the auto codec: the candidate that won, and its prediction.
    let auto = achieved.and_then(|e| e.auto.as_ref());
    let st = r.stats.as_deref();
    // The values' range (of a ggml block type: of its dequantized values).
    let values = st.and_then(|s| {
        s.values
            .as_ref()
            .or_else(|| s.dequantized.as_ref()?.values.as_ref())
    });
    out.push_str("<tr class=\"row");
    if st.is_none() {
        out.push_str(" pending");
    }
    out.push('"');
    let attrs: [(&str, Option<String>); 23] = [
        ("data-name", Some(r.name.clone())),
        ("data-dtype", Some(r.type_name())),
        ("data-shape", serde_json::to_string(&r.shape).ok()),
        ("data-params", Some(r.params.to_string())),
        ("data-bytes", Some(r.bytes.to_string())),
        ("data-byte-entropy", st.map(|s| s.byte_entropy.to_string())),
        (
            "data-groups",
            st.map(|s| serde_json::to_string(&s.byte_group_entropy).unwrap_or_default()),
        ),
        (
            "data-bits",
            st.map(|s| serde_json::to_string(&s.bit_set_ratio).unwrap_or_default()),
        ),
        (
            "data-min",
            values.and_then(|v| v.min).map(|x| x.to_string()),
        ),
        (
            "data-max",
            values.and_then(|v| v.max).map(|x| x.to_string()),
        ),
        (
            "data-exp",
            st.and_then(|s| s.exponent_entropy).map(|e| e.to_string()),
        ),
        ("data-pred-ratio", st.map(|s| s.predicted_ratio.to_string())),
        ("data-pred-bytes", st.map(|s| s.predicted_bytes.to_string())),
        ("data-achieved", achieved.map(|e| e.ratio.to_string())),
        ("data-codec", achieved.map(|e| e.codec.clone())),
        ("data-stored", achieved.map(|e| e.stored_bytes.to_string())),
        ("data-delta", achieved.map(|e| e.delta.to_string())),
        ("data-auto-chosen", auto.map(|a| a.chosen.clone())),
        (
            "data-auto-predicted",
            auto.map(|a| a.predicted_bytes.to_string()),
        ),
        ("data-mse", err.map(|e| e.mse.to_string())),
        ("data-max-abs", err.map(|e| e.max_abs.to_string())),
        ("data-mean-rel", err.map(|e| e.mean_rel.to_string())),
        ("data-max-rel", err.map(|e| e.max_rel.to_string())),
    ];
    for (name, value) in &attrs {
        attr(out, name, value.as_deref());
    }
    out.push('>');
    cell(out, "num dim", None, &(i + 1).to_string());
    cell(out, "name", Some(&r.name), &r.name);
    if c.multi_file() {
        cell(out, "file dim", None, &c.files[r.file].path);
    }
    cell(out, "", None, &r.type_name());
    cell(out, "shape", None, &shape(&r.shape));
    cell(out, "num", None, &count(r.params));
    cell(out, "num", None, &bytes(r.bytes));
    if let (Some(_), Some(e)) = (snapshot, achieved) {
        cell(out, "codec", None, &format!("{}{}", e.codec, delta_note(e)));
        cell(out, "num stored", None, &bytes(e.stored_bytes));
        ratio_cell(out, achieved);
    }
    // A statistic's text, or "…" while the statistics are pending.
    let stat = |f: &dyn Fn(&TensorStats) -> String| st.map_or_else(|| "…".to_owned(), f);
    cell(
        out,
        "groups",
        None,
        &stat(&|s| groups(&s.byte_group_entropy)),
    );
    cell(
        out,
        "num",
        None,
        &stat(&|s| s.exponent_entropy.map_or("–".into(), |e| format!("{e:.2}"))),
    );
    cell(
        out,
        "num",
        None,
        &stat(&|s| format!("{:.3}", s.predicted_ratio)),
    );
    if snapshot.is_none() {
        ratio_cell(out, achieved);
    }
    out.push_str("</tr>");
}

/// What follows a codec's name when the tensor was stored as an XOR delta of its base.
fn delta_note(e: &EntryInfo) -> &'static str {
    if e.delta {
        " (XOR delta)"
    } else {
        ""
    }
}

/// The achieved ratio cell: the ratio, a lossy tensor's max relative error, and with the auto
/// codec the candidate that won with its predicted and achieved size.
fn ratio_cell(out: &mut String, achieved: Option<&EntryInfo>) {
    let err = achieved.and_then(|e| e.error);
    let title = achieved.map(|e| match err {
        Some(er) => format!(
            "{}: {} of {} bytes; MSE {}, max relative error {}",
            e.codec,
            e.stored_bytes,
            e.bytes,
            number(er.mse, 3),
            number(er.max_rel, 3)
        ),
        None => format!(
            "{}{}: {} of {} bytes",
            e.codec,
            delta_note(e),
            e.stored_bytes,
            e.bytes
        ),
    });
    out.push_str("<td class=\"num achieved\"");
    attr(out, "title", title.as_deref());
    out.push('>');
    escape(
        out,
        &achieved.map_or("–".into(), |e| format!("{:.3}", e.ratio)),
    );
    if let Some(er) = err {
        out.push_str("<span class=\"err dim\">");
        escape(out, &format!(" ±{}", number(er.max_rel, 2)));
        out.push_str("</span>");
    }
    if let (Some(a), Some(e)) = (achieved.and_then(|e| e.auto.as_ref()), achieved) {
        let all: Vec<String> = a
            .predicted
            .iter()
            .map(|(c, b)| format!("{c} {b}"))
            .collect();
        let title = format!(
            "auto chose {}; predicted bytes per candidate (from {} sampled bytes): {}",
            a.chosen,
            a.sample_bytes,
            all.join(", ")
        );
        out.push_str("<span class=\"auto dim\"");
        attr(out, "title", Some(&title));
        out.push('>');
        escape(
            out,
            &format!(
                " {} · predicted {}, achieved {}",
                a.chosen,
                bytes(a.predicted_bytes),
                bytes(e.stored_bytes)
            ),
        );
        out.push_str("</span>");
    }
    out.push_str("</td>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::checkpoint::FileInfo;
    use bitlens_tensors::format::{Data, ElementType, Entry, Format, Layout};
    use bitlens_tensors::Dtype;

    #[test]
    fn a_tensor_name_from_the_file_is_text_not_markup() {
        let evil = "<img src=x onerror=alert(1)>\"'&";
        let layout = Layout {
            format: Format::Gguf,
            kind: "GGUF v3".into(),
            file_size: 64,
            entries: vec![Entry {
                name: evil.into(),
                ty: ElementType::Dtype(Dtype::F32),
                shape: vec![4],
                data: Data::Range { offset: 0, len: 16 },
            }],
            metadata: vec![],
        };
        let c = Checkpoint::new(
            1,
            "<b>.gguf".into(),
            vec![FileInfo::other("<b>.gguf".into(), layout)],
            None,
        )
        .unwrap();
        let html = rows_html(&c, &[0], &|_| None);
        assert!(!html.contains("<img") && !html.contains("<b>"), "{html}");
        assert!(
            html.contains(" data-name=\"&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;\""),
            "{html}"
        );
        assert_eq!(html.matches("<tr").count(), 1);
        assert_eq!(html.matches("</td>").count(), html.matches("<td").count());
    }

    #[test]
    fn text_and_attributes_are_escaped() {
        let mut out = String::new();
        cell(&mut out, "name", Some("a\"b'<c>&"), "<x> & \"y\"");
        assert_eq!(
            out,
            "<td class=\"name\" title=\"a&quot;b&#39;&lt;c&gt;&amp;\">&lt;x&gt; &amp; &quot;y&quot;</td>"
        );
    }
}
