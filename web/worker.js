// bitlens worker (module worker). Runs the `bitlens-wasm` module and streams File/Blob byte ranges
// through it in windows, so a file of any size never sits whole in memory. Two roles:
//
// - statistics (`worker.js`): the page's pool (web/src/ui/pool.rs) hands out one task at a time
//   and cancels by terminating the worker. Always the single-threaded build.
// - codec (`worker.js?role=codec`, web/src/ui/codec.rs): compress / decompress / snapshot index /
//   codec round trips. It loads the threaded build (`threads/bitlens-wasm.js`, made by
//   scripts/build-web.sh) when the page is cross-origin isolated (`crossOriginIsolated` and
//   `SharedArrayBuffer`) and starts its rayon pool here, inside the worker (on the main thread a
//   rayon call would busy-wait); otherwise, or when that build is missing or fails to start, the
//   single-threaded build. It reports which one with a `ready` message.
//
// Messages in:
//   {kind: 'stats', task, blob, spans: [{item, dtype, offset, bytes}]}   spans contiguous in blob
//   {kind: 'flips', task, spans: [{item, dtype, a, aOffset, b, bOffset, bytes}]}   a, b: Blobs
//   {kind: 'compress', task, files: [{blob, base?}], options}   safetensors Blobs → snapshot Blobs
//   {kind: 'decompress', task, files: [{blob, base?}]}          snapshot Blobs → safetensors Blobs
//   {kind: 'snapshot-info', task, blob}                a snapshot's index
//   {kind: 'roundtrip', task, blob, offset, bytes, dtype, codecs: [{label, codec, mantissa_bits?}]}
// The codec kinds read synchronously with FileReaderSync over Blob.slice (the core's streaming
// compressor pulls frames through a ReadAt; crates/wasm reads ahead in large pieces) and transfer
// the output chunks to the page as they come, which folds them into a Blob: neither the input nor
// the output is ever whole in wasm memory. Files are done one after
// another; compress stops at the first failure (as the CLI does), decompress reports a failed
// file and goes on with the next.
// Messages out (at most every FLUSH_MS, and once at the end):
//   {type: 'update', task, bytes, results: [{item, json}]}
//   {type: 'done', task, bytes, results, memory}
//   {type: 'error', task, item, message}
//   codec role: {type: 'ready', build: 'threads' | 'single', threads, reason?} once, then per job
//   {type: 'progress', task, done, total}, per file of compress / decompress
//   {type: 'chunk', task, file, chunk: ArrayBuffer (transferred), bytes} as output is made,
//   {type: 'file', task, file, json, seconds, memory} or {type: 'file', task, file, error},
//   and last {type: 'done', task, bytes: 0, results: [], memory, seconds, json?}
const WINDOW = 4 << 20; // bytes per Blob.slice read
const FLUSH_MS = 100;
const CODEC = new URL(import.meta.url).searchParams.get('role') === 'codec';

// True when scripts/build-web.sh made the threaded build (it says so in builds.json).
async function threadedBuilt() {
  try {
    const r = await fetch(new URL('./builds.json', import.meta.url));
    return r.ok && (await r.json()).threads === true;
  } catch (e) {
    return false;
  }
}

// The module: the threaded build for the codec worker of an isolated page, else single-threaded.
async function load() {
  let reason = CODEC ? null : 'statistics worker';
  if (CODEC && !(self.crossOriginIsolated && typeof SharedArrayBuffer === 'function')) {
    reason = 'the page is not cross-origin isolated (no SharedArrayBuffer)';
  } else if (CODEC && !(await threadedBuilt())) {
    reason = 'the threaded build was not made (no nightly toolchain with rust-src when the app was built)';
  } else if (CODEC) {
    try {
      const m = await import('./threads/bitlens-wasm.js');
      await m.default({ module_or_path: new URL('./threads/bitlens-wasm_bg.wasm', import.meta.url) });
      await m.initThreadPool(Math.max(1, navigator.hardwareConcurrency || 1));
      return { m, build: 'threads', threads: m.threadCount(), reason: null };
    } catch (e) {
      reason = `threaded build unavailable: ${e && e.message ? e.message : e}`;
    }
  }
  const m = await import('./bitlens-wasm.js');
  await m.default({ module_or_path: new URL('./bitlens-wasm_bg.wasm', import.meta.url) });
  return { m, build: 'single', threads: 1, reason };
}

const ready = load();
let wasm = null; // the module's exports, once loaded
if (CODEC) {
  ready.then(
    async (r) => {
      wasm = r.m;
      await startReadAhead().catch(() => {}); // without it, files are read on this thread
      self.postMessage({ type: 'ready', build: r.build, threads: r.threads, reason: r.reason });
    },
    (e) => self.postMessage({ type: 'error', task: 0, message: `cannot load the module: ${e && e.message ? e.message : e}` }),
  );
}

class Reporter {
  constructor(task) {
    this.task = task;
    this.bytes = 0;
    this.results = [];
    this.last = performance.now();
  }
  add(bytes) {
    this.bytes += bytes;
    this.maybeFlush();
  }
  result(item, json) {
    this.results.push({ item, json });
    this.maybeFlush();
  }
  maybeFlush() {
    if (performance.now() - this.last >= FLUSH_MS) this.flush('update');
  }
  flush(type) {
    const msg = { type, task: this.task, bytes: this.bytes, results: this.results };
    if (type === 'done') msg.memory = wasm.memoryBytes();
    self.postMessage(msg);
    this.bytes = 0;
    this.results = [];
    this.last = performance.now();
  }
}

// Reads [start, end) of a blob in windows of WINDOW bytes. The range is cut with Blob.slice and
// streamed with a BYOB reader into one reused buffer: measured in headless Chromium on a 1 GB file,
// this reads at ~1.7 GB/s, while `await blob.slice(a, b).arrayBuffer()` per 4 MiB window (one IPC
// round trip and a fresh buffer each) reads at ~0.5 GB/s. Browsers without BYOB streams get the
// per-window slices.
class WindowReader {
  constructor(blob, start, end) {
    this.blob = blob;
    this.pos = start;
    this.end = end;
    this.buf = new ArrayBuffer(Math.max(1, Math.min(WINDOW, end - start)));
    try {
      this.reader = blob.slice(start, end).stream().getReader({ mode: 'byob' });
    } catch (e) {
      this.reader = null;
    }
  }

  // The next `n` bytes (n ≤ WINDOW) as a view that stays valid until the next call.
  async next(n) {
    if (this.reader === null) {
      const buf = await this.blob.slice(this.pos, this.pos + n).arrayBuffer();
      if (buf.byteLength !== n) throw new Error(`file ended early at byte ${this.pos + buf.byteLength}`);
      this.pos += n;
      return new Uint8Array(buf);
    }
    let filled = 0;
    while (filled < n) {
      const { done, value } = await this.reader.read(new Uint8Array(this.buf, filled, n - filled));
      if (value) this.buf = value.buffer;
      if (done) throw new Error(`file ended early at byte ${this.pos + filled}`);
      filled += value.byteLength;
    }
    this.pos += n;
    return new Uint8Array(this.buf, 0, n);
  }

  close() {
    if (this.reader) this.reader.cancel().catch(() => {});
  }
}

// Calls fn(window) for consecutive windows of [start, end) of a blob.
async function eachWindow(blob, start, end, fn) {
  const r = new WindowReader(blob, start, end);
  try {
    for (let pos = start; pos < end; ) {
      const w = await r.next(Math.min(WINDOW, end - pos));
      pos += w.length;
      fn(w);
    }
  } finally {
    r.close();
  }
}

async function runStats(msg, rep) {
  const { blob, spans } = msg;
  let si = 0;
  let acc = null;
  let need = 0;
  const finishEmpty = () => {
    while (si < spans.length && spans[si].bytes === 0) {
      const a = new wasm.StatsAccumulator(spans[si].dtype, 0);
      rep.result(spans[si].item, a.finish());
      a.free();
      si++;
    }
  };
  finishEmpty();
  if (si === spans.length) return;
  const start = spans[si].offset;
  const last = spans[spans.length - 1];
  await eachWindow(blob, start, last.offset + last.bytes, (w) => {
    let p = 0;
    while (p < w.length) {
      if (acc === null) {
        acc = new wasm.StatsAccumulator(spans[si].dtype, spans[si].bytes);
        need = spans[si].bytes;
      }
      const take = Math.min(need, w.length - p);
      acc.update(w.subarray(p, p + take));
      p += take;
      need -= take;
      if (need === 0) {
        rep.result(spans[si].item, acc.finish());
        acc.free();
        acc = null;
        si++;
        finishEmpty();
      }
    }
    rep.add(w.length);
  });
}

async function runFlips(msg, rep) {
  for (const s of msg.spans) {
    const acc = new wasm.FlipsAccumulator(s.dtype, s.bytes);
    const ra = new WindowReader(s.a, s.aOffset, s.aOffset + s.bytes);
    const rb = new WindowReader(s.b, s.bOffset, s.bOffset + s.bytes);
    try {
      for (let pos = 0; pos < s.bytes; ) {
        const n = Math.min(WINDOW, s.bytes - pos);
        const [a, b] = await Promise.all([ra.next(n), rb.next(n)]);
        acc.update(a, b);
        pos += n;
        rep.add(2 * n);
      }
      rep.result(s.item, acc.finish());
    } finally {
      ra.close();
      rb.close();
      acc.free();
    }
  }
}

// A synchronous `read(offset, length) -> Uint8Array` over a Blob (workers only).
function syncReader(blob) {
  const fr = new FileReaderSync();
  return (offset, length) => new Uint8Array(fr.readAsArrayBuffer(blob.slice(offset, offset + length)));
}

// A synchronous `read(offset, length)` that reads ahead on another thread: web/reader.js fills two
// window-sized slots of a SharedArrayBuffer, the next window while the codec works on the current
// one (crates/wasm reads a file front to back, one window of readAheadBytes() at a time, and uses
// the bytes `read` returned only until it calls `read` again). It waits with Atomics.wait, so it
// needs a cross-origin isolated page (SharedArrayBuffer); elsewhere, and for reads longer than a
// slot, it reads directly. One reader thread and one pair of slots serve every file of the worker
// in turn (request ids are unique, and the reader handles requests in order); startReadAhead()
// starts the thread, and must have resolved before a job blocks on it.
let readAhead = null;
const canReadAhead = () => self.crossOriginIsolated && typeof SharedArrayBuffer === 'function';

let readAheadStarting = null;
function startReadAhead() {
  if (readAheadStarting === null && canReadAhead()) {
    readAheadStarting = (async () => {
      const slotBytes = wasm.readAheadBytes();
      const worker = new Worker(new URL('./reader.js', import.meta.url));
      // A round trip before anything blocks on it (see reader.js).
      await new Promise((resolve, reject) => {
        worker.onmessage = (e) => e.data && e.data.pong && resolve();
        worker.onerror = (e) => reject(new Error(`read-ahead worker: ${e.message}`));
        worker.postMessage({ ping: true });
      });
      readAhead = {
        worker,
        slotBytes,
        data: new SharedArrayBuffer(2 * slotBytes),
        ctl: new Int32Array(new SharedArrayBuffer(16)),
        next: 1,
      };
    })();
  }
  return readAheadStarting ?? Promise.resolve();
}

function aheadReader(blob) {
  const direct = syncReader(blob);
  if (readAhead === null) return direct;
  const ra = readAhead;
  const slotBytes = ra.slotBytes;
  ra.worker.postMessage({ blob, data: ra.data, ctl: ra.ctl.buffer, slotBytes });
  const pending = [null, null]; // per slot: {id, offset, length} of its last request
  let current = -1; // the slot whose bytes the caller holds
  const request = (slot, offset, length) => {
    pending[slot] = { id: ra.next++, offset, length };
    ra.worker.postMessage({ slot, ...pending[slot] });
  };
  const wait = (slot) => {
    const { id } = pending[slot];
    for (;;) {
      const v = Atomics.load(ra.ctl, 2 * slot);
      if (v === id) return;
      if (v === -id) throw new Error(`the browser could not read bytes ${pending[slot].offset}…`);
      Atomics.wait(ra.ctl, 2 * slot, v);
    }
  };
  return (offset, length) => {
    if (length > slotBytes) return direct(offset, length);
    let slot = [0, 1].find((s) => s !== current && pending[s] && pending[s].offset === offset && pending[s].length === length);
    if (slot === undefined) {
      // Not the window read ahead: read it into the slot the caller is done with.
      slot = current < 0 ? 0 : current;
      request(slot, offset, length);
    }
    wait(slot);
    if (Atomics.load(ra.ctl, 2 * slot + 1) !== length) throw new Error(`short read at byte ${offset}`);
    current = slot;
    const next = offset + length;
    const other = slot ^ 1;
    if (next < blob.size && !(pending[other] && pending[other].offset === next)) {
      request(other, next, Math.min(slotBytes, blob.size - next));
    }
    return new Uint8Array(ra.data, slot * slotBytes, length);
  };
}

// Passes each output chunk of file `file` to the page, transferred (not copied): the page builds
// the Blob (web/src/ui/io/blob.rs BlobBuilder), so the copy into the browser's blob store runs on
// the page's thread while this worker goes on coding.
function chunkPoster(task, file) {
  return (chunk) => self.postMessage({ type: 'chunk', task, file, chunk: chunk.buffer, bytes: chunk.byteLength }, [chunk.buffer]);
}

// Posts progress (units done of `total`, over every file of the job) at most every FLUSH_MS.
class Progress {
  constructor(task, total) {
    this.task = task;
    this.total = total;
    this.base = 0; // units of the files already done
    this.last = 0;
  }
  // A callback for the current file: `done` counts from its start.
  file() {
    return (done) => {
      const t = performance.now();
      const all = this.base + done;
      if (t - this.last >= FLUSH_MS || all >= this.total) {
        this.last = t;
        self.postMessage({ type: 'progress', task: this.task, done: all, total: this.total });
      }
    };
  }
}

function compressOne(file, options, onChunk, onProgress) {
  const json = wasm.compressSnapshot(
    aheadReader(file.blob),
    file.blob.size,
    options,
    file.base ? syncReader(file.base) : undefined,
    file.base ? file.base.size : 0,
    onChunk,
    onProgress,
  );
  return { json, bytes: JSON.parse(json).in_bytes };
}

function decompressOne(file, onChunk, onProgress) {
  const info = wasm.openSnapshot(syncReader(file.blob), file.blob.size);
  const bytes = wasm.decompressSnapshot(
    aheadReader(file.blob),
    file.blob.size,
    file.base ? syncReader(file.base) : undefined,
    file.base ? file.base.size : 0,
    onChunk,
    onProgress,
  );
  return { json: info, bytes };
}

// Compresses or decompresses every file of the job, posting each result as it is ready.
function runFiles(msg) {
  const compress = msg.kind === 'compress';
  const total = compress ? msg.files.reduce((n, f) => n + f.blob.size, 0) : msg.total;
  const progress = new Progress(msg.task, total);
  msg.files.forEach((file, i) => {
    const t0 = performance.now();
    try {
      const onChunk = chunkPoster(msg.task, i);
      const out = compress ? compressOne(file, msg.options, onChunk, progress.file()) : decompressOne(file, onChunk, progress.file());
      const seconds = (performance.now() - t0) / 1e3;
      progress.base += out.bytes;
      self.postMessage({ type: 'file', task: msg.task, file: i, seconds, memory: wasm.memoryBytes(), json: out.json });
    } catch (err) {
      if (compress) throw err;
      self.postMessage({ type: 'file', task: msg.task, file: i, error: errorText(err) });
    }
  });
  return {};
}

function runRoundtrip(msg) {
  const data = syncReader(msg.blob)(msg.offset, msg.bytes);
  const now = () => performance.now();
  const rows = [];
  for (const c of msg.codecs) {
    let row;
    if (c.codec.startsWith('peer:')) row = JSON.parse(wasm.peerCodecRoundtrip(c.codec.slice(5), data, now));
    else row = JSON.parse(wasm.codecRoundtrip(JSON.stringify({ codec: c.codec, mantissa_bits: c.mantissa_bits ?? null }), msg.dtype, data, now));
    rows.push({ label: c.label, ...row });
    self.postMessage({ type: 'progress', task: msg.task, done: rows.length, total: msg.codecs.length });
  }
  return { json: JSON.stringify(rows) };
}

function errorText(err) {
  return err && err.message ? err.message : String(err);
}

self.onmessage = async (event) => {
  const msg = event.data;
  const rep = new Reporter(msg.task);
  try {
    wasm = (await ready).m;
    if (msg.kind === 'stats') await runStats(msg, rep);
    else if (msg.kind === 'flips') await runFlips(msg, rep);
    else if (['compress', 'decompress', 'snapshot-info', 'roundtrip'].includes(msg.kind)) {
      const t0 = performance.now();
      let out;
      if (msg.kind === 'compress' || msg.kind === 'decompress') {
        await startReadAhead().catch(() => {});
        out = runFiles(msg);
      } else if (msg.kind === 'snapshot-info') out = { json: wasm.openSnapshot(syncReader(msg.blob), msg.blob.size) };
      else out = runRoundtrip(msg);
      const seconds = (performance.now() - t0) / 1e3;
      self.postMessage({ type: 'done', task: msg.task, bytes: 0, results: [], memory: wasm.memoryBytes(), seconds, ...out });
      return;
    } else throw new Error(`unknown task kind ${msg.kind}`);
    rep.flush('done');
  } catch (err) {
    self.postMessage({ type: 'error', task: msg.task, message: errorText(err) });
  }
};
