// The floor of the page's whole-file compress / decompress path (issue 16): how fast headless
// Chromium lets a Web Worker read a File the person gave the page and hand an output of the same
// size back to the page as a downloadable Blob / File — with no codec, so the numbers bound what
// "the page at 0.7× the native CLI" can mean here. A throwaway page (not the app) is served from a
// temporary directory; each case runs in a dedicated worker, timed from the page's message to the
// worker to its result on the page (for outputs: the final Blob / File in hand and an object URL
// made of it), with the CPU time every browser process spent meanwhile (tests/e2e/page-codec.mjs).
// Reads copy each chunk into a reused `WebAssembly.Memory` (as the codec's window would be), warmed
// before timing; every read and every output is checked (sizes; an output's bytes against what was
// written, after timing).
//
//   node tests/e2e/bench-page-io.mjs FILE [ROUNDS=5] [--isolate]     (ONLY=REGEX: the cases named so)
//
// Prints one line per case: the fastest and median milliseconds (and GB/s of FILE's size) and the
// median CPU milliseconds of every browser process. `--isolate` serves the page cross-origin
// isolated (as the threaded build's page is).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { browserCpuNs } from './page-codec.mjs';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const isolate = process.argv.includes('--isolate');
const file = path.resolve(args[0]);
const rounds = Number(args[1] ?? 5);
const size = fs.statSync(file).size;
const MiB = 1 << 20;
/** Idle milliseconds after each case before its CPU time is read (the browser's background work
 * for it, e.g. moving a Blob's bytes to the browser process, counts). */
const SETTLE_MS = 300;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PAGE = `<!doctype html><meta charset=utf-8><input type=file id=f><script type=module>
const worker = new Worker('w.js');
let pending = null;
worker.onmessage = (e) => pending(e.data);
const ask = (msg) => new Promise((resolve) => { pending = resolve; worker.postMessage(msg); });
window.runCase = async (c) => {
  const file = document.getElementById('f').files[0];
  const t0 = performance.now();
  let parts = [], folded = null, pendingBytes = 0, out = null;
  const collect = new Promise((resolve) => {
    pending = async (m) => {
      if (m.chunk !== undefined) {
        parts.push(m.chunk);
        pendingBytes += m.bytes;
        if (m.each) {
          parts[parts.length - 1] = new Blob([m.chunk]);
        } else if (m.fold && pendingBytes >= m.fold) {
          folded = new Blob(folded ? [folded, ...parts] : parts);
          parts = []; pendingBytes = 0;
        }
        return;
      }
      resolve(m);
    };
  });
  worker.postMessage({ ...c, file });
  const done = await collect;
  if (done.error) return { error: done.error };
  if (done.opfs) out = await (await (await navigator.storage.getDirectory()).getFileHandle(done.opfs)).getFile();
  else if (done.file) out = done.file;
  else if (c.write) out = new Blob(folded ? [folded, ...parts] : parts);
  let url = null;
  if (out) url = URL.createObjectURL(out);
  const ms = performance.now() - t0;
  window.last = { out, url, bytes: done.bytes };
  return { ms, workerMs: done.ms, bytes: done.bytes };
};
// Checks the last case's output (after its timing): its size, and every 4093th byte.
window.checkLast = async () => {
  const { out, url, bytes } = window.last;
  window.last = null;
  if (!out) return null;
  const got = new Uint8Array(await out.arrayBuffer());
  URL.revokeObjectURL(url);
  return got.length === bytes && got.every((b, i) => i % 4093 !== 0 || b === ((i * 7) & 255));
};
window.clearOpfs = async () => {
  const root = await navigator.storage.getDirectory();
  for await (const name of root.keys()) await root.removeEntry(name);
};
</script>`;

// The worker: every case reads `file` or writes `file.size` bytes, from / into one reused
// WebAssembly.Memory (64 MiB past a 1 MiB offset, warmed by touching it at start; before a write
// case, its first chunk is filled with a pattern the page checks).
const WORKER = `
const mem = new WebAssembly.Memory({ initial: 1040, maximum: 65536 });
const heap = new Uint8Array(mem.buffer);
for (let i = 0; i < heap.length; i += 4096) heap[i] = 1;
const BASE = 1 << 20;
const fill = (n) => { for (let i = 0; i < n; i++) heap[BASE + i] = (i * 7) & 255; };
const frs = new FileReaderSync();
const reader = new Worker('r.js');
// Calls each(offset, length) for the consecutive n-byte chunks of \`size\` bytes; returns \`size\`.
const chunks = (size, n, each) => {
  for (let at = 0; at < size; at += n) each(at, Math.min(n, size - at));
  return size;
};
// Stands for the codec: spins \`work\` ms per MiB of output before each chunk.
const busy = (work, len) => {
  if (!work) return;
  const until = performance.now() + (work * len) / (1 << 20);
  while (performance.now() < until);
};
let scratch = new ArrayBuffer(0);
const cases = {
  // Reading.
  frsWhole(file) { return frs.readAsArrayBuffer(file).byteLength; },
  frsChunks(file, n) {
    return chunks(file.size, n, (at, len) => heap.set(new Uint8Array(frs.readAsArrayBuffer(file.slice(at, at + len))), BASE));
  },
  async sliceArrayBuffer(file, n) {
    let done = 0;
    while (done < file.size) {
      const len = Math.min(n, file.size - done);
      heap.set(new Uint8Array(await file.slice(done, done + len).arrayBuffer()), BASE);
      done += len;
    }
    return done;
  },
  // Two slices in flight: the next one's read overlaps this one's copy.
  async sliceArrayBufferAhead(file, n) {
    let done = 0;
    const at = (o) => file.slice(o, Math.min(o + n, file.size)).arrayBuffer();
    let next = at(0);
    while (done < file.size) {
      const buf = await next;
      if (done + buf.byteLength < file.size) next = at(done + buf.byteLength);
      heap.set(new Uint8Array(buf), BASE);
      done += buf.byteLength;
    }
    return done;
  },
  async byob(file, n) {
    if (scratch.byteLength !== n) scratch = new ArrayBuffer(n);
    const reader = file.stream().getReader({ mode: 'byob' });
    let done = 0;
    for (;;) {
      let filled = 0;
      while (filled < n && done + filled < file.size) {
        const { value, done: end } = await reader.read(new Uint8Array(scratch, filled, n - filled));
        if (end) break;
        scratch = value.buffer;
        filled += value.length;
      }
      if (filled === 0) break;
      heap.set(new Uint8Array(scratch, 0, filled), BASE);
      done += filled;
    }
    return done;
  },
  // The BYOB reader with \`work\` ms/MiB of work on each chunk after it is read: one read at a time
  // (\`ahead\` false), or the next chunk's read asked for before the work on this one (two
  // buffers), so that the browser can fill it meanwhile.
  async byobWork(file, n, fold, each, work, flush, ahead) {
    const bufs = [new ArrayBuffer(n), new ArrayBuffer(n)];
    const reader = file.stream().getReader({ mode: 'byob' });
    // Reads the next chunk (up to n bytes) into bufs[k]: resolves to its length.
    const fill = async (k) => {
      let filled = 0;
      while (filled < n) {
        const { value, done: end } = await reader.read(new Uint8Array(bufs[k], filled, n - filled));
        if (value) bufs[k] = value.buffer;
        if (end) break;
        filled += value.length;
      }
      return filled;
    };
    let done = 0, k = 0;
    let next = fill(0);
    for (;;) {
      const filled = await next;
      if (filled === 0) break;
      if (ahead) next = fill(1 - k);
      heap.set(new Uint8Array(bufs[k], 0, filled), BASE);
      busy(work, filled);
      done += filled;
      if (!ahead) next = fill(k);
      else k = 1 - k;
    }
    return done;
  },
  // A second worker reads the file with the BYOB reader and posts each n-byte chunk (transferred,
  // not copied) through a MessageChannel, up to \`ahead\` chunks ahead; this worker copies each
  // into wasm memory and works \`work\` ms/MiB on it: the reading off this worker's thread.
  async readerWork(file, n, fold, each, work, flush, ahead) {
    const { port1, port2 } = new MessageChannel();
    reader.postMessage({ file, n, ahead: ahead || 2, port: port2 }, [port2]);
    const queue = [];
    let wake = null;
    port1.onmessage = ({ data }) => { queue.push(data); if (wake) { wake(); wake = null; } };
    let done = 0;
    for (;;) {
      while (queue.length === 0) await new Promise((r) => { wake = r; });
      const m = queue.shift();
      if (m.end) break;
      port1.postMessage('more');
      heap.set(new Uint8Array(m.buf, 0, m.len), BASE);
      busy(work, m.len);
      done += m.len;
    }
    port1.close();
    return done;
  },
  frsWork(file, n, fold, each, work) {
    return chunks(file.size, n, (at, len) => {
      heap.set(new Uint8Array(frs.readAsArrayBuffer(file.slice(at, at + len))), BASE);
      busy(work, len);
    });
  },
  // The default reader: the stream's own chunks (no BYOB), each copied into wasm memory.
  async stream(file) {
    const reader = file.stream().getReader();
    let done = 0;
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      heap.set(value, BASE + (done % (32 << 20)));
      done += value.length;
    }
    return done;
  },
  // A synchronous XMLHttpRequest of a blob: URL with a Range header (workers allow sync XHR).
  syncXhr(file, n) {
    const url = URL.createObjectURL(file);
    try {
      return chunks(file.size, n, (at, len) => {
        const x = new XMLHttpRequest();
        x.open('GET', url, false);
        x.responseType = 'arraybuffer';
        x.setRequestHeader('Range', 'bytes=' + at + '-' + (at + len - 1));
        x.send();
        if (x.response.byteLength !== len) throw new Error('range gave ' + x.response.byteLength);
        heap.set(new Uint8Array(x.response), BASE);
      });
    } finally { URL.revokeObjectURL(url); }
  },
  // Writing: n-byte chunks of wasm memory to the page.
  copyPost(file, n, fold, each, work) {
    return chunks(file.size, n, (at, len) => {
      busy(work, len);
      const chunk = heap.slice(BASE, BASE + len).buffer;
      postMessage({ chunk, bytes: len, fold, each }, [chunk]);
    });
  },
  workAlone(file, n, fold, each, work) {
    return chunks(file.size, n, (at, len) => busy(work, len));
  },
  blobPost(file, n) {
    return chunks(file.size, n, (at, len) => postMessage({ chunk: new Blob([heap.subarray(BASE, BASE + len)]), bytes: len }));
  },
  blobOnce(file, n) {
    const parts = [];
    const bytes = chunks(file.size, n, (at, len) => parts.push(new Blob([heap.subarray(BASE, BASE + len)])));
    return { bytes, file: new Blob(parts) };
  },
  async opfs(file, n, fold, each, work, flush) {
    const root = await navigator.storage.getDirectory();
    const name = 'out-' + Math.random().toString(36).slice(2);
    const handle = await (await root.getFileHandle(name, { create: true })).createSyncAccessHandle();
    try {
      const bytes = chunks(file.size, n, (at, len) => {
        busy(work, len);
        const w = handle.write(heap.subarray(BASE, BASE + len), { at });
        if (w !== len) throw new Error('wrote ' + w);
      });
      if (flush) handle.flush();
      return { bytes, opfs: name };
    } finally { handle.close(); }
  },
};
onmessage = async ({ data: c }) => {
  try {
    if (c.write) fill(c.chunk);
    const t0 = performance.now();
    let r = await cases[c.kind](c.file, c.chunk, c.fold, c.each, c.work, c.flush, c.ahead);
    const ms = performance.now() - t0;
    if (typeof r === 'number') r = { bytes: r };
    postMessage({ ...r, ms });
  } catch (e) {
    postMessage({ error: String(e) });
  }
};
`;

// The reader worker of the \`readerWork\` case: streams the file in n-byte chunks, each posted
// (transferred) as soon as it is read while fewer than \`ahead\` are unconsumed.
const READER = `
onmessage = async ({ data: { file, n, ahead, port } }) => {
  let credit = ahead, wake = null;
  port.onmessage = () => { credit++; if (wake) { wake(); wake = null; } };
  const reader = file.stream().getReader({ mode: 'byob' });
  for (;;) {
    let buf = new ArrayBuffer(n), filled = 0, end = false;
    while (filled < n) {
      const r = await reader.read(new Uint8Array(buf, filled, n - filled));
      if (r.value) buf = r.value.buffer;
      if (r.done) { end = true; break; }
      filled += r.value.length;
    }
    if (filled > 0) {
      while (credit === 0) await new Promise((r) => { wake = r; });
      credit--;
      port.postMessage({ buf, len: filled }, [buf]);
    }
    if (end || filled < n) break;
  }
  port.postMessage({ end: true });
};
`;

const CASES = [
  { name: 'read: FileReaderSync, the whole file (no copy)', kind: 'frsWhole' },
  ...[1, 4, 8, 32, 64].map((m) => ({ name: `read: FileReaderSync, ${m} MiB slices → wasm memory`, kind: 'frsChunks', chunk: m * MiB })),
  ...[1, 4, 8, 32].map((m) => ({ name: `read: await slice.arrayBuffer(), ${m} MiB → wasm memory`, kind: 'sliceArrayBuffer', chunk: m * MiB })),
  ...[4, 8].map((m) => ({ name: `read: slice.arrayBuffer() one ahead, ${m} MiB → wasm memory`, kind: 'sliceArrayBufferAhead', chunk: m * MiB })),
  ...[1, 4, 8, 32].map((m) => ({ name: `read: File.stream() BYOB, ${m} MiB → wasm memory`, kind: 'byob', chunk: m * MiB })),
  { name: 'read: File.stream() default reader → wasm memory', kind: 'stream' },
  ...[4, 32].map((m) => ({ name: `read: sync XHR of a blob: URL, Range ${m} MiB → wasm memory`, kind: 'syncXhr', chunk: m * MiB })),
  // Writing, the worker idle between chunks (the floor), then spinning 1 ms per MiB before each
  // chunk (as a codec of ~1 GB/s would): what the output costs beyond the codec's own time.
  ...[0, 1].flatMap((work) => {
    const w = work ? `, ${work} ms/MiB of work` : '';
    return [
      { name: `write: 8 MiB copies posted, page folds every 64 MiB (today)${w}`, kind: 'copyPost', chunk: 8 * MiB, fold: 64 * MiB, write: true, work },
      { name: `write: 8 MiB copies posted, page makes each a Blob on arrival${w}`, kind: 'copyPost', chunk: 8 * MiB, each: true, write: true, work },
      { name: `write: 1 MiB copies posted, page makes each a Blob on arrival${w}`, kind: 'copyPost', chunk: 1 * MiB, each: true, write: true, work },
      { name: `write: 8 MiB copies posted, one new Blob(parts) at the end${w}`, kind: 'copyPost', chunk: 8 * MiB, write: true, work },
      ...(work ? [] : [
        { name: 'write: 8 MiB Blobs made in the worker, posted', kind: 'blobPost', chunk: 8 * MiB, write: true },
        { name: 'write: 8 MiB Blobs made in the worker, one Blob posted', kind: 'blobOnce', chunk: 8 * MiB, write: true },
        { name: 'write: OPFS sync access handle, 8 MiB writes, flush, page getFile()', kind: 'opfs', chunk: 8 * MiB, write: true, flush: true },
      ]),
      { name: `write: OPFS sync access handle, 8 MiB writes, page getFile()${w}`, kind: 'opfs', chunk: 8 * MiB, write: true, work },
      { name: `write: OPFS sync access handle, 1 MiB writes, page getFile()${w}`, kind: 'opfs', chunk: 1 * MiB, write: true, work },
    ];
  }),
  { name: 'the 1 ms/MiB of work alone, no output', kind: 'workAlone', chunk: 8 * MiB, work: 1 },
  // Reading while a codec works (issue 28: can the read overlap the codec?).
  ...[0.5, 1].flatMap((work) => [1, 4].flatMap((m) => [
    { name: `read + ${work} ms/MiB: FileReaderSync, ${m} MiB`, kind: 'frsWork', chunk: m * MiB, work },
    { name: `read + ${work} ms/MiB: BYOB, ${m} MiB, one read at a time`, kind: 'byobWork', chunk: m * MiB, work, ahead: false },
    { name: `read + ${work} ms/MiB: BYOB, ${m} MiB, next read asked before the work`, kind: 'byobWork', chunk: m * MiB, work, ahead: true },
    { name: `read + ${work} ms/MiB: a reader worker's BYOB, ${m} MiB chunks posted, 4 ahead`, kind: 'readerWork', chunk: m * MiB, work, ahead: 4 },
  ])),
  ...[0.5, 1].map((work) => ({ name: `the ${work} ms/MiB of work alone`, kind: 'workAlone', chunk: 1 * MiB, work })),
];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bitlens-io-'));
fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
fs.writeFileSync(path.join(dir, 'w.js'), WORKER);
fs.writeFileSync(path.join(dir, 'r.js'), READER);
const server = await startServer(dir, 0, { isolate });
const context = await launch();
try {
  const page = await context.newPage();
  page.on('console', (m) => process.stderr.write(`page: ${m.text()}\n`));
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  await page.waitForFunction(() => typeof window.runCase === 'function');
  await page.setInputFiles('#f', file);
  // The browser's CPU time over SETTLE_MS idle (median of 5), taken off every case's.
  const idles = [];
  for (let i = 0; i < 5; i++) {
    const c0 = browserCpuNs();
    await sleep(SETTLE_MS);
    idles.push((browserCpuNs() - c0) / 1e6);
  }
  const idle = idles.sort((a, b) => a - b)[2];
  console.log(`# ${path.basename(file)} (${size} bytes), ${rounds} rounds, isolated: ${isolate}, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`| case | fastest ms (GB/s) | median ms | median CPU ms, every browser process (${SETTLE_MS} ms after, idle ${idle.toFixed(0)} ms taken off) |`);
  console.log('| --- | --- | --- | --- |');
  const only = new RegExp(process.env.ONLY ?? '');
  for (const c of CASES.filter((c) => only.test(c.name))) {
    const ms = [];
    const cpu = [];
    for (let r = 0; r < rounds; r++) {
      const c0 = browserCpuNs();
      const got = await page.evaluate((c) => window.runCase(c), { kind: c.kind, chunk: c.chunk, fold: c.fold, write: c.write, each: c.each, work: c.work, flush: c.flush, ahead: c.ahead });
      await sleep(SETTLE_MS);
      cpu.push((browserCpuNs() - c0) / 1e6 - idle);
      if (got.error) throw new Error(`${c.name}: ${got.error}`);
      if (got.bytes !== size) throw new Error(`${c.name}: ${got.bytes} bytes of ${size}`);
      const check = await page.evaluate(() => window.checkLast());
      if (c.write && check !== true) throw new Error(`${c.name}: the output's bytes are wrong`);
      ms.push(got.ms);
      if (c.kind === 'opfs') await page.evaluate(() => window.clearOpfs());
    }
    const sorted = (a) => [...a].sort((x, y) => x - y);
    const med = (a) => sorted(a)[a.length >> 1];
    const best = sorted(ms)[0];
    console.log(`| ${c.name} | ${best.toFixed(1)} (${(size / best / 1e6).toFixed(2)}) | ${med(ms).toFixed(1)} | ${med(cpu).toFixed(0)} |`);
  }
} finally {
  await context.close();
  server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
