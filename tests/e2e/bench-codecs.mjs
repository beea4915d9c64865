// LMC compression and decompression speed in the page vs the native CLI (a benchmark, not a test:
// it prints numbers and asserts only that outputs are right). In headless Chromium, for each FILE
// and each build of the codec module — single-threaded (page not cross-origin isolated) and wasm
// threads (isolated page, forced by `?codec-threads=<cores>`; when dist/threads exists) — it
// compresses FILE with LMC in the codec worker RUNS times (the whole path: File → .bls Blob,
// reads, frames, output chunks folded into a Blob; tests/e2e/page-codec.mjs times it from the click to the result on the page), checks the
// page's snapshot is the CLI's byte for byte, gives it to the page and decompresses it RUNS times
// (.bls → safetensors Blob), checking the restored file is FILE byte for byte; it reports input MB
// / seconds. Native figures come from `bitlens --threads 1 compress` / `decompress` / `bench` run
// by scripts/bench-web.sh in the same run. For the first FILE it also times the codec round trip
// (compute only, no I/O) on the file's largest tensor and, like `bitlens bench`, every tensor
// through LMC in memory (compute only) with the single-threaded module in the page. With
// BIG=FILE2, one compression of FILE2 per build (speed and wasm memory).
//
//   node tests/e2e/bench-codecs.mjs FILE...     (RUNS=5 by default)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, tempDir } from './fixtures.mjs';
import { openCodecPage, timedCompress, timedDecompress, loadOwnSnapshot, checkRestored, codecAloneRounds } from './page-codec.mjs';

const files = process.argv.slice(2);
const file = files[0];
const big = process.env.BIG;
const runs = Number(process.env.RUNS ?? 5);
const DIST = process.env.DIST ?? path.join(ROOT, 'dist');
const threaded = fs.existsSync(path.join(DIST, 'threads', 'bitlens-wasm_bg.wasm'));
const server = await startServer(DIST, 0);
const plain = await startServer(DIST, 0, { isolate: false });
const urlOf = (s) => `http://127.0.0.1:${s.address().port}/`;
const context = await launch();
const tmp = tempDir();
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mbps = (bytes, seconds) => Number(bytes) / Number(seconds) / 1e6;
const spread = (xs) => `median of ${xs.length}: ${med(xs).toFixed(0)} MB/s (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;

/** A page (isolated and forced to the threaded build with one thread per core, or not isolated)
 * with `input` loaded, its statistics done, the Codecs view open on LMC. */
const pageWith = (isolated, input) =>
  openCodecPage(context, isolated ? `${urlOf(server)}?codec-threads=${os.availableParallelism()}` : urlOf(plain), input);

const describe = (m) => `${(Number(m.in) / 1e6).toFixed(1)} MB → ${(Number(m.out) / 1e6).toFixed(1)} MB (ratio ${Number(m.ratio).toFixed(4)}) in ${Number(m.seconds).toFixed(3)} s = ${mbps(m.in, m.seconds).toFixed(0)} MB/s, wasm memory ${(Number(m.memory) / (1 << 20)).toFixed(0)} MiB`;
const builds = threaded ? [false, true] : [false];
if (!threaded) console.log('page: no dist/threads (threaded build skipped): single-threaded figures only');
let page;
for (const f of files) {
  const base = path.basename(f, '.safetensors');
  for (const isolated of builds) {
    ({ page } = await pageWith(isolated, f));
    const enc = [];
    let build = '';
    for (let r = 0; r < runs; r++) {
      const m = await timedCompress(page);
      build = `${m.build}, ${m.threads} thread${m.threads === '1' ? '' : 's'}`;
      enc.push(mbps(m.in, m.seconds));
      console.log(`page LMC compress ${base} (${build}) run ${r + 1}: ${describe(m)}`);
    }
    console.log(`page LMC compress ${base} (${build}) ${spread(enc)}`);
    // Decompression of the page's own snapshot (checked to be the CLI's), restored byte for byte.
    await loadOwnSnapshot(page, f, tmp, `${base}-${isolated ? 'threads' : 'single'}`);
    const dec = [];
    for (let r = 0; r < runs; r++) {
      const d = await timedDecompress(page);
      if (r === 0) await checkRestored(page, f, tmp, `${base}-${isolated ? 'threads' : 'single'}`);
      dec.push(mbps(d.bytes, d.seconds));
      console.log(`page LMC decompress ${base} (${build}) run ${r + 1}: ${(d.bytes / 1e6).toFixed(1)} MB in ${d.seconds.toFixed(3)} s = ${mbps(d.bytes, d.seconds).toFixed(0)} MB/s (worker ${d.workerSeconds.toFixed(3)} s)`);
    }
    console.log(`page LMC decompress ${base} (${build}) ${spread(dec)}; restored file identical to ${base}`);
    if (big && f === file) {
      const { page: p } = await pageWith(isolated, big);
      console.log(`page LMC compress (${build}) ${path.basename(big)}: ${describe(await timedCompress(p))}`);
      await p.close();
    }
    if (!(f === files[files.length - 1] && isolated === builds[builds.length - 1])) await page.close();
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
// The compute-only figures are of the first file: with several files, it is opened again.
if (files.length > 1) {
  await page.close();
  ({ page } = await pageWith(false, file));
}
// Compute only: the largest tensor through codecRoundtrip (LMC), as in the Detail view.
await page.click('[data-tab=tensors]');
await page.click('th[data-sort=bytes]');
const name = await page.$eval('#tensor-table tbody tr', (tr) => tr.dataset.name);
await page.click(`#tensor-table tbody tr[data-name="${name}"]`);
await page.click('#compare-codecs');
await page.waitForSelector('#codec-comparison', { timeout: 600_000 });
const lmc = await page.$eval('#codec-comparison tr[data-label="bitlens LMC"]', (tr) => ({ ...tr.dataset }));
console.log(`page LMC on ${name} (compute only, one run): compress ${Number(lmc.encMbps).toFixed(0)} MB/s, decompress ${Number(lmc.decMbps).toFixed(0)} MB/s`);
// Like `bitlens bench`: every tensor in memory through LMC (codecRoundtrip, frame by frame),
// compute only, in the page's main thread with the workers' module. The input is linked into dist/.
const link = path.join(DIST, 'bench-input.safetensors');
fs.rmSync(link, { force: true });
fs.symlinkSync(path.resolve(file), link);
try {
  const whole = await codecAloneRounds(page, '/bench-input.safetensors', runs);
  whole.forEach((w, i) => console.log(`page LMC codec only (as bitlens bench) run ${i + 1}: compress ${w.enc.toFixed(0)} MB/s, decompress ${w.dec.toFixed(0)} MB/s, ratio ${w.ratio.toFixed(4)}`));
  console.log(`page LMC codec only median of ${runs}: compress ${med(whole.map((w) => w.enc)).toFixed(0)} MB/s, decompress ${med(whole.map((w) => w.dec)).toFixed(0)} MB/s`);
} finally {
  fs.rmSync(link, { force: true });
}
await context.close();
server.close();
plain.close();
