//! The worker's statistics and flips tasks on remote files, as WebAssembly in node (node ≥ 18 has
//! `fetch`): a small HTTP server in the test's own JavaScript (node:http) serves bytes with
//! `Range`, so windows, the requests ahead, retries on a 503 and the refusal of a server that
//! ignores `Range` run as in a worker, and give exactly what the core gives on the same bytes.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used)]

mod common;
use bitlens_protocol::js::{from_js, to_js, Event};
use bitlens_protocol::{
    FileRef, FlipSpan, JobResult, RemoteFile, Results, StatsSpan, WorkerEvent, WorkerRequest,
};
use bitlens_stats::{Accumulator, FlipAccumulator};
use bitlens_tensors::format::ElementType;
use bitlens_tensors::Dtype;
use bitlens_wasm::worker::post::Post;
use bitlens_wasm::worker::{run, Helpers};
use bitlens_wasm::Failure;
use js_sys::Uint8Array;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(inline_js = r#"
export async function serve(bytes, range, fail) {
  const http = await import('node:http');
  const data = Buffer.from(bytes);
  let failures = fail;
  const log = [];
  const server = http.createServer((req, res) => {
    log.push(req.headers.range ?? '');
    if (failures > 0) {
      failures -= 1;
      res.writeHead(503);
      res.end();
      return;
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!range || !m) {
      res.writeHead(200, { 'Content-Length': data.length });
      res.end(data);
      return;
    }
    const a = Number(m[1]);
    const b = Math.min(Number(m[2]), data.length - 1);
    res.writeHead(206, { 'Content-Range': `bytes ${a}-${b}/${data.length}`, 'Content-Length': b - a + 1 });
    res.end(data.subarray(a, b + 1));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/f`, log, close: () => server.close() };
}
"#)]
extern "C" {
    fn serve(bytes: &Uint8Array, range: bool, fail: u32) -> js_sys::Promise;
}

/// A test server: its URL, the `Range` header of every request, and how to stop it.
struct Server(JsValue);

impl Server {
    async fn start(bytes: &[u8], range: bool, fail: u32) -> Server {
        Server(
            JsFuture::from(serve(&Uint8Array::from(bytes), range, fail))
                .await
                .unwrap(),
        )
    }

    fn file(&self, size: usize) -> FileRef<bitlens_protocol::js::Js> {
        let url = js_sys::Reflect::get(&self.0, &"url".into()).unwrap();
        FileRef::Url(RemoteFile {
            url: url.as_string().unwrap(),
            size: size as u64,
            credentials: false,
        })
    }

    fn requests(&self) -> u32 {
        js_sys::Array::from(&js_sys::Reflect::get(&self.0, &"log".into()).unwrap()).length()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let close = js_sys::Reflect::get(&self.0, &"close".into()).unwrap();
        js_sys::Function::from(close).call0(&self.0).unwrap();
    }
}

#[derive(Default)]
struct Collect(RefCell<Vec<Event>>);

impl Post for Collect {
    fn post(&self, event: &Event, _transfer: Option<&JsValue>) -> Result<(), Failure> {
        self.0.borrow_mut().push(from_js(to_js(event)?)?);
        Ok(())
    }
}

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 24) as u8)
        .collect()
}

async fn events(request: &WorkerRequest<bitlens_protocol::js::Js>, window: usize) -> Vec<Event> {
    let out = Collect::default();
    run(to_js(request).unwrap(), Helpers::default(), &out, window).await;
    out.0.into_inner()
}

/// The results of a task's events, and the bytes they report.
fn results(events: Vec<Event>) -> (Results, u64) {
    let mut stats = Vec::new();
    let mut flips = Vec::new();
    let mut diffs = Vec::new();
    let mut read = 0;
    for e in events {
        let batch = match e {
            WorkerEvent::Update { batch, .. }
            | WorkerEvent::Done {
                result: JobResult::Items(batch),
                ..
            } => batch,
            other => panic!("unexpected event {other:?}"),
        };
        read += batch.bytes;
        match batch.results {
            Results::Stats(v) => stats.extend(v),
            Results::Flips(v) => flips.extend(v),
            Results::Diffs(v) => diffs.extend(v),
        }
    }
    if !diffs.is_empty() {
        (Results::Diffs(diffs), read)
    } else if flips.is_empty() {
        (Results::Stats(stats), read)
    } else {
        (Results::Flips(flips), read)
    }
}

#[wasm_bindgen_test]
async fn remote_statistics_match_the_core_and_survive_a_503() {
    let data = bytes(50_000, 3);
    // One 503 first: the first window is retried.
    let server = Server::start(&data, true, 1).await;
    let layout = [
        (100, 7_000, Dtype::BF16),
        (7_100, 30_000, Dtype::F32),
        (37_100, 12_900, Dtype::U8),
    ];
    let spans = common::spans(&layout);
    let request = WorkerRequest::Stats {
        task: 1,
        file: server.file(data.len()),
        spans,
    };
    let (got, read) = results(events(&request, 4_096).await);
    let Results::Stats(mut got) = got else {
        panic!("statistics expected")
    };
    got.sort_by_key(|(i, _)| *i);
    for ((item, stats), &(offset, len, dtype)) in got.iter().zip(&layout) {
        let (a, b) = (offset as usize, (offset + len) as usize);
        let mut acc = Accumulator::new(dtype, len);
        acc.update(&data[a..b]).unwrap();
        assert_eq!(*stats, acc.finish().unwrap(), "item {item}");
    }
    assert_eq!(got.len(), 3);
    assert_eq!(read, 49_900);
    // 7 remote windows (twice the 4096-byte Blob window) of at most 8192 bytes, one asked twice.
    assert_eq!(server.requests(), 7 + 1);
}

#[wasm_bindgen_test]
async fn remote_flips_against_a_remote_file_match_the_core() {
    let (a, b) = (bytes(20_000, 1), bytes(20_000, 2));
    let (sa, sb) = (
        Server::start(&a, true, 0).await,
        Server::start(&b, true, 0).await,
    );
    let request = WorkerRequest::Flips {
        task: 2,
        spans: vec![FlipSpan {
            item: 0,
            dtype: Dtype::BF16,
            a: sa.file(a.len()),
            a_offset: 10,
            b: sb.file(b.len()),
            b_offset: 30,
            bytes: 15_000,
        }],
    };
    let (got, read) = results(events(&request, 4_000).await);
    let mut acc = FlipAccumulator::new(Dtype::BF16, 15_000);
    acc.update(&a[10..15_010], &b[30..15_030]).unwrap();
    assert_eq!(got, Results::Flips(vec![(0, acc.finish().unwrap())]));
    assert_eq!(read, 30_000);
}

#[wasm_bindgen_test]
async fn a_server_ignoring_range_fails_the_task_naming_the_url() {
    let data = bytes(10_000, 4);
    let server = Server::start(&data, false, 0).await;
    let file = server.file(data.len());
    let FileRef::Url(remote) = &file else {
        unreachable!()
    };
    let url = remote.url.clone();
    let request = WorkerRequest::Stats {
        task: 3,
        file,
        spans: vec![StatsSpan {
            item: 0,
            ty: ElementType::Dtype(Dtype::U8),
            offset: 0,
            bytes: 10_000,
        }],
    };
    let got = events(&request, 4_096).await;
    let Some(WorkerEvent::Failed {
        task: Some(3),
        message,
    }) = got.last()
    else {
        panic!("{got:?}")
    };
    assert!(message.starts_with(&url), "{message}");
    assert!(message.contains("ignores Range"), "{message}");
}
