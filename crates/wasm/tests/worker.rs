//! The worker's job loop run as WebAssembly (in node): typed requests in, typed events out.
//! Statistics and flips tasks read `Blob`s in small windows (so spans start and end inside,
//! across and outside windows) and give exactly what the core's accumulators give on the same
//! bytes; every task ends with one `Done`, its bytes add up, and a request the worker cannot read
//! fails without a task.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used)]

use bitlens_protocol::js::{to_js, Event, Js};
use bitlens_protocol::{
    FileRef, FlipSpan, JobResult, Results, StatsSpan, WorkerEvent, WorkerRequest,
};
use bitlens_stats::entry::ElementAccumulator;
use bitlens_stats::{FlipAccumulator, FlipStats};
use bitlens_tensors::format::{ElementType, GgmlType};
use bitlens_tensors::Dtype;
use bitlens_wasm::worker::post::Post;
use bitlens_wasm::worker::{run, Helpers};
use bitlens_wasm::Failure;
use js_sys::{Array, Uint8Array};
use std::cell::RefCell;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::Blob;

/// Every event posted, in order.
#[derive(Default)]
struct Collect(RefCell<Vec<Event>>);

impl Post for Collect {
    fn post(&self, event: &Event, _transfer: Option<&JsValue>) -> Result<(), Failure> {
        // Through JavaScript and back, as the page reads it.
        let js = to_js(event)?;
        let back: Event = bitlens_protocol::js::from_js(js)?;
        self.0.borrow_mut().push(back);
        Ok(())
    }
}

fn blob(bytes: &[u8]) -> Blob {
    Blob::new_with_u8_array_sequence(&Array::of1(&Uint8Array::from(bytes))).unwrap()
}

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 24) as u8)
        .collect()
}

/// Runs a request with windows of `window` bytes; its events.
async fn events(request: &WorkerRequest<Js>, window: usize) -> Vec<Event> {
    let out = Collect::default();
    run(to_js(request).unwrap(), Helpers::default(), &out, window).await;
    out.0.into_inner()
}

/// The items and bytes of a statistics / flips task's `Update`s and `Done`.
fn items(events: Vec<Event>, task: u32) -> (Results, u64) {
    let (mut stats, mut flips, mut bytes) = (Vec::new(), Vec::new(), 0);
    let last = events.len() - 1;
    for (i, e) in events.into_iter().enumerate() {
        let batch = match e {
            WorkerEvent::Update { task: t, batch } if i < last => {
                assert_eq!(t, task);
                batch
            }
            WorkerEvent::Done {
                task: t,
                result: JobResult::Items(batch),
                ..
            } if i == last => {
                assert_eq!(t, task);
                batch
            }
            other => panic!("unexpected event {other:?}"),
        };
        bytes += batch.bytes;
        match batch.results {
            Results::Stats(v) => stats.extend(v),
            Results::Flips(v) => flips.extend(v),
            Results::Diffs(v) => panic!("no entry flips task here: {v:?}"),
        }
    }
    assert!(stats.is_empty() || flips.is_empty());
    let results = if flips.is_empty() {
        Results::Stats(stats)
    } else {
        Results::Flips(flips)
    };
    (results, bytes)
}

/// Runs statistics task `task` over `layout` ((offset, bytes, element type) per tensor, in the order
/// the page sends them) of `file` with windows of several sizes, and checks every tensor against
/// the core's accumulator on the same bytes, and the bytes reported against each tensor's own.
async fn stats_match_the_core(file: &[u8], layout: &[(u64, u64, ElementType)], task: u32) {
    let spans: Vec<StatsSpan> = layout
        .iter()
        .enumerate()
        .map(|(item, &(offset, bytes, ty))| StatsSpan {
            item,
            ty,
            offset,
            bytes,
        })
        .collect();
    let request = WorkerRequest::Stats {
        task,
        file: FileRef::Blob(Js(blob(file).into())),
        spans,
    };
    for window in [1_000, 4_096, 1 << 20] {
        let (results, read) = items(events(&request, window).await, task);
        let Results::Stats(mut got) = results else {
            panic!("statistics expected")
        };
        got.sort_by_key(|(item, _)| *item);
        assert_eq!(got.len(), layout.len());
        for ((item, stats), &(offset, len, ty)) in got.iter().zip(layout) {
            let mut acc = ElementAccumulator::new(ty, len).unwrap();
            acc.update(&file[offset as usize..(offset + len) as usize])
                .unwrap();
            assert_eq!(
                *stats,
                acc.finish().unwrap(),
                "item {item}, window {window}"
            );
        }
        // Each tensor's bytes count once per tensor; padding read through does not count.
        assert_eq!(read, layout.iter().map(|l| l.1).sum::<u64>());
    }
}

/// A plain dtype as an element type.
fn plain(d: Dtype) -> ElementType {
    ElementType::Dtype(d)
}

#[wasm_bindgen_test]
async fn stats_of_spans_across_windows_match_the_core() {
    // Empty spans first, inside and last; spans shorter and longer than a window, starting after
    // the file's first byte.
    let layout = [
        (8, 0, plain(Dtype::BF16)),
        (8, 2_000, plain(Dtype::BF16)),
        (2_008, 8, plain(Dtype::F32)),
        (2_016, 0, plain(Dtype::U8)),
        (2_016, 9_000, plain(Dtype::F16)),
        (11_016, 8_984, plain(Dtype::U8)),
        (20_000, 0, plain(Dtype::F32)),
    ];
    stats_match_the_core(&bytes(20_000, 1), &layout, 7).await;
}

#[wasm_bindgen_test]
async fn stats_read_through_small_gaps_and_apart_otherwise() {
    let q8 = ElementType::Ggml(GgmlType::Q8_0);
    // ggml blocks and plain tensors 10 bytes apart (one read, the padding read through); an empty
    // tensor; ggml blocks past a gap larger than the read-through (a read of its own); the same
    // bytes again (one storage as two tensors) and a tensor before them (out of file order): each
    // a read of its own.
    let layout = [
        (10, 3_400, q8),
        (3_420, 1_000, plain(Dtype::F32)),
        (4_420, 0, plain(Dtype::BF16)),
        (150_000, 6_800, q8),
        (150_000, 6_800, plain(Dtype::U8)),
        (156_800, 2_000, plain(Dtype::BF16)),
        (100, 2_000, plain(Dtype::F16)),
    ];
    stats_match_the_core(&bytes(200_000, 5), &layout, 3).await;
}

#[wasm_bindgen_test]
async fn flips_match_the_core() {
    let (a, b) = (bytes(30_000, 1), bytes(30_000, 2));
    let (blob_a, blob_b) = (blob(&a), blob(&b));
    let pairs = [(0, 100, 12_000), (12_000, 12_100, 17_900), (5, 5, 0)];
    let spans = pairs
        .iter()
        .enumerate()
        .map(|(item, &(a_offset, b_offset, bytes))| FlipSpan {
            item,
            dtype: Dtype::BF16,
            a: FileRef::Blob(Js(blob_a.clone().into())),
            a_offset,
            b: FileRef::Blob(Js(blob_b.clone().into())),
            b_offset,
            bytes,
        })
        .collect();
    let request = WorkerRequest::Flips { task: 3, spans };
    let (results, read) = items(events(&request, 5_000).await, 3);
    let Results::Flips(got) = results else {
        panic!("flips expected")
    };
    let expected: Vec<(usize, FlipStats)> = pairs
        .iter()
        .enumerate()
        .map(|(item, &(ao, bo, n))| {
            let (ao, bo, n) = (ao as usize, bo as usize, n as usize);
            let mut acc = FlipAccumulator::new(Dtype::BF16, n as u64);
            acc.update(&a[ao..ao + n], &b[bo..bo + n]).unwrap();
            (item, acc.finish().unwrap())
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(read, 2 * (12_000 + 17_900));
}

#[wasm_bindgen_test]
async fn a_short_file_fails_its_task_and_a_bad_request_fails_without_one() {
    let request = WorkerRequest::Stats {
        task: 9,
        file: FileRef::Blob(Js(blob(&[0; 100]).into())),
        spans: vec![StatsSpan {
            item: 0,
            ty: ElementType::Dtype(Dtype::U8),
            offset: 50,
            bytes: 80,
        }],
    };
    let got = events(&request, 1_000).await;
    assert!(
        matches!(got.last(), Some(WorkerEvent::Failed { task: Some(9), message }) if message.contains("ended early")),
        "{got:?}"
    );
    let out = Collect::default();
    run(
        JsValue::from_str("stats please"),
        Helpers::default(),
        &out,
        1_000,
    )
    .await;
    assert!(matches!(
        out.0.borrow().as_slice(),
        [WorkerEvent::Failed { task: None, .. }]
    ));
}

/// The start-up warm-up runs every warmed type's statistics (none refused), on data whose values
/// are all finite: the kernels' path for finite values, the one real files take.
#[wasm_bindgen_test]
fn the_warm_up_runs_every_type_on_finite_values() {
    use bitlens_wasm::worker::warm::{synthetic, warm_types, warm_up, WARM_BYTES};
    let types: Vec<_> = warm_types().collect();
    assert_eq!(types.len(), 7, "{types:?}");
    assert_eq!(warm_up(), types.len());
    for ty in types {
        let bytes = synthetic(ty);
        assert!(
            bytes.len() <= WARM_BYTES && bytes.len() > WARM_BYTES / 2,
            "{ty:?}"
        );
        let mut acc = ElementAccumulator::new(ty, bytes.len() as u64).unwrap();
        acc.update(&bytes).unwrap();
        let stats = acc.finish().unwrap();
        let values = match ty {
            ElementType::Dtype(_) => stats.values,
            ElementType::Ggml(_) => stats.dequantized.and_then(|d| d.values),
        }
        .unwrap();
        assert!(values.count > 0, "{ty:?}");
        assert_eq!(values.finite, values.count, "{ty:?}: {values:?}");
    }
}

/// The codec worker's warm-up round-trips its synthetic data through LMC.
#[wasm_bindgen_test]
fn the_codec_warm_up_round_trips() {
    assert!(bitlens_wasm::worker::warm::warm_up_codec());
}

/// A file read as a stream (`StreamIn`, as the compress and decompress jobs read their input):
/// reads that span its 1 MiB pieces are served from them, the bytes it has not read or has
/// forgotten are not, and what is read follows the file whatever the steps.
#[wasm_bindgen_test]
async fn a_stream_serves_the_bytes_it_holds_across_its_pieces() {
    use bitlens_wasm::worker::streamed::{HeldBytes, StreamIn, STREAM_READ};
    let file = bytes(3 * STREAM_READ + 12_345, 7);
    let (start, end) = (1_000u64, file.len() as u64 - 5);
    let held = HeldBytes::default();
    let mut stream = StreamIn::new(&held, &blob(&file), start, end);
    let slice = |a: u64, n: usize| &file[a as usize..a as usize + n];
    let mut buf = vec![0u8; 300_000];
    assert!(!held.copy_to(start, &mut buf[..10]), "nothing is read yet");
    let read = stream.fill_to(start + 10).await.unwrap();
    assert_eq!(read, start + STREAM_READ as u64, "one whole read");
    assert!(held.copy_to(start, &mut buf[..10]));
    assert_eq!(&buf[..10], slice(start, 10));
    // Across the first and second pieces.
    let at = start + STREAM_READ as u64 - 100_000;
    assert!(!held.copy_to(at, &mut buf), "the second piece is not read");
    stream.fill_to(at + buf.len() as u64).await.unwrap();
    assert!(held.copy_to(at, &mut buf));
    assert_eq!(&buf[..], slice(at, buf.len()));
    // The first piece forgotten, the second kept.
    stream.forget_before(start + STREAM_READ as u64 + 1);
    assert!(!held.copy_to(start, &mut buf[..10]));
    assert!(held.copy_to(start + STREAM_READ as u64, &mut buf[..10]));
    assert_eq!(&buf[..10], slice(start + STREAM_READ as u64, 10));
    // Up to the end (past it is clamped), the last piece short.
    assert_eq!(stream.fill_to(u64::MAX).await.unwrap(), end);
    let n = 50_000;
    assert!(held.copy_to(end - n as u64, &mut buf[..n]));
    assert_eq!(&buf[..n], slice(end - n as u64, n));
    assert!(!held.copy_to(end - 10, &mut buf[..11]), "past the range");
    stream.finish().await.unwrap();
}
