// Whole in-page LMC compression and decompression of a file, timed as a user meets them (issue 16's
// page row): a page of the app with the file given to it, the Codecs view, then from the click on
// Compress (or on a snapshot's Decompress) to the result on the page, its Blob built — the File read
// by the codec worker, the wasm copies, the codec, the output chunks posted and folded into a Blob,
// and the page drawn. Timed inside the page (performance.now at the click, a MutationObserver for the
// result), so no polling interval counts; and the CPU time all of the browser's processes spent
// meanwhile (Linux: every thread's run time in /proc/PID/task/TID/schedstat), which waiting for a
// core on a busy machine does not inflate. Shared by tests/e2e/bench-codecs.mjs and
// tests/e2e/bench-page.mjs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli, download, sameBytes } from './steps.mjs';

/** Nanoseconds of CPU time that this process's descendants (the browser's processes) have run. */
export function browserCpuNs() {
  const parent = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const ours = (pid) => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  let ns = 0;
  for (const pid of [...parent.keys()].filter(ours)) {
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // gone meanwhile
      }
    }
  }
  return ns;
}

/** Ten minutes: the longest a single compression or decompression may take in a benchmark. */
const LIMIT_MS = 600_000;

/**
 * A page (cross-origin isolated: the threaded build when made; else single-threaded) at `url` with
 * `file` loaded, its statistics done, and the Codecs view open with LMC on the whole file chosen.
 * Resolves to the page and the codec worker's build (`{build, threads}`).
 */
export async function openCodecPage(context, url, file) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector('#file-input', { state: 'attached' });
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('.progress[data-state=done]', { timeout: LIMIT_MS });
  await page.click('[data-tab=codecs]');
  await page.waitForSelector('#codec-build[data-build]', { timeout: 60_000 });
  await page.selectOption('#codec-select', 'lmc');
  await page.selectOption('#base-select', '');
  const build = await page.$eval('#codec-build', (e) => ({ build: e.dataset.build, threads: Number(e.dataset.threads) }));
  return { page, build };
}

/**
 * Clicks `button` and resolves, in milliseconds of the page's clock, when the job's result is on the
 * page: `kind` 'compress' (a new #compress-result) or 'decompress' (a new download link of the
 * first snapshot's restored file), with no job progress left.
 */
function timedClick(page, button, kind) {
  return page.evaluate(
    ({ button, kind, limit }) =>
      new Promise((resolve, reject) => {
        const state = () =>
          kind === 'compress'
            ? (document.querySelector('#compress-result')?.dataset.seconds ?? null)
            : (document.querySelector('.snapshot .decompress-download')?.getAttribute('href') ?? null);
        const before = state();
        const timer = setTimeout(() => reject(new Error(`${kind}: no result in ${limit} ms`)), limit);
        // The job's progress shown then gone also tells a new result from the last one (should the
        // two have the same seconds, to the clock's 0.1 ms on a page that is not isolated).
        let ran = false;
        const observer = new MutationObserver(() => {
          const now = state();
          const running = document.querySelector('.codec-progress') !== null;
          ran ||= running;
          if (now !== null && !running && (now !== before || ran)) {
            const ms = performance.now() - t0;
            observer.disconnect();
            clearTimeout(timer);
            resolve(ms);
          }
        });
        observer.observe(document.body, { subtree: true, childList: true, attributes: true });
        const t0 = performance.now();
        document.querySelector(button).click();
      }),
    { button, kind, limit: LIMIT_MS },
  );
}

/**
 * One LMC compression of the page's checkpoint. Returns `{seconds}` (click to result on the page),
 * `cpuSeconds` (of every browser process meanwhile) and the result's data attributes (`in`, `out`,
 * `ratio`, and as `appSeconds` the app's own `seconds`: job start to the last Blob built).
 */
export async function timedCompress(page) {
  const cpu = browserCpuNs();
  const ms = await timedClick(page, '#compress-button', 'compress');
  const cpuSeconds = (browserCpuNs() - cpu) / 1e9;
  const result = await page.$eval('#compress-result', (r) => ({ ...r.dataset }));
  return { ...result, appSeconds: Number(result.seconds), seconds: ms / 1e3, cpuSeconds };
}

/**
 * One decompression of the page's first snapshot. Returns `{seconds}` (click to the restored
 * file's link on the page), `cpuSeconds` (of every browser process meanwhile), `workerSeconds`
 * (the worker's own time for the file) and `bytes`.
 */
export async function timedDecompress(page) {
  const cpu = browserCpuNs();
  const ms = await timedClick(page, '.snapshot .decompress-button', 'decompress');
  const cpuSeconds = (browserCpuNs() - cpu) / 1e9;
  const done = await page.$eval('.snapshot .decompressed', (p) => ({ ...p.dataset }));
  const bytes = await page.$eval('.snapshot .decompress-download', (a) => Number(a.dataset.bytes));
  return { seconds: ms / 1e3, workerSeconds: Number(done.seconds), bytes, cpuSeconds };
}

/**
 * After a compression of `file` in `page`: saves the page's snapshot to `dir`, checks it is the
 * CLI's byte for byte (`bitlens compress`, the same build's format), gives it to the page, and
 * waits until it can be decompressed. Returns the snapshot's path.
 */
export async function loadOwnSnapshot(page, file, dir, name) {
  const { out } = await download(page, '#compress-download', path.join(dir, `${name}.bls`));
  const native = path.join(dir, `${name}-cli.bls`);
  cli('--threads', '1', 'compress', file, '-o', native, '--codec', 'lmc');
  sameBytes(out, native, `${name}: page snapshot vs CLI snapshot`);
  fs.rmSync(native);
  await page.setInputFiles('#file-input', out);
  await page.waitForSelector('.snapshot .decompress-button:not([disabled])', { timeout: LIMIT_MS });
  return out;
}

/** After a decompression in `page`: saves the restored file to `dir` and checks it is `file` byte for byte. */
export async function checkRestored(page, file, dir, name) {
  const { out } = await download(page, '.snapshot .decompress-download', path.join(dir, `${name}.safetensors`));
  sameBytes(out, file, `${name}: page restore vs the original`);
  fs.rmSync(out);
}

/** Asserts a round's figures are sane (sizes as the file's). */
export function checkRound(file, c, d) {
  const size = fs.statSync(file).size;
  assert.equal(Number(c.in), size, 'compressed input size');
  assert.equal(d.bytes, size, 'restored size');
}

/**
 * The codec alone, as `bitlens bench --codecs lmc` runs it natively: every tensor of the
 * safetensors file at `url` (same origin as `page`) through LMC in memory with the page's
 * single-threaded wasm module (`codecRoundtrip`: the wasm's own encode and decode time, no I/O),
 * `rounds` times; per round its (compress, decompress) MB/s of the tensors' bytes and ratio.
 * Shared by tests/e2e/bench-codecs.mjs and tests/e2e/bench-codec-alone.mjs.
 */
export function codecAloneRounds(page, url, rounds) {
  return page.evaluate(
    async ([url, rounds]) => {
      const m = await import('/bitlens-wasm.js');
      await m.default({ module_or_path: '/bitlens-wasm_bg.wasm' });
      const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
      const n = Number(m.headerPrefixLen(bytes.subarray(0, 8), bytes.length));
      const h = JSON.parse(m.parseHeader(bytes.subarray(0, n), bytes.length));
      const out = [];
      for (let r = 0; r < rounds; r++) {
        let enc = 0, dec = 0, raw = 0, stored = 0;
        for (const t of h.tensors) {
          const [a, b] = t.data_offsets;
          const res = m.codecRoundtrip({ codec: 'lmc' }, t.dtype, bytes.subarray(h.data_start + a, h.data_start + b));
          enc += res.encode_seconds;
          dec += res.decode_seconds;
          raw += res.bytes;
          stored += res.stored_bytes;
        }
        out.push({ enc: raw / enc / 1e6, dec: raw / dec / 1e6, ratio: stored / raw });
      }
      return out;
    },
    [url, rounds],
  );
}
