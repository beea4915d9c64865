// The page row of tests/python/bench_peers.py (issue 16), as a coprocess it drives round by round,
// so the page runs in the same rounds as ZipNN and the CLI. For FILE it opens one page per variant
// of the codec worker — by default the single-threaded build (page not cross-origin isolated) and
// the threaded build with a pool of one thread per core (isolated page, `?codec-threads=<cores>`;
// when scripts/build-web.sh made dist/threads) — compresses FILE with LMC in each once, checks the
// page's snapshot against the CLI's and the restored file against FILE byte for byte, then prints
// `{"ready": [builds]}`. Each line on stdin is a round: each page compresses FILE and decompresses
// its snapshot once (tests/e2e/page-codec.mjs: click to result on the page, Blob built), and one
// JSON line is printed: `{"round": [{variant, build, threads, compress_s, decompress_s,
// compress_cpu_s, decompress_cpu_s (every browser process), app_compress_s, worker_decompress_s,
// ratio}], "floor": {compress_s, decompress_s}}`, the floor being the browser's own I/O for the same
// input and output sizes with no codec, in the same browser and round (tests/e2e/page-floor.mjs:
// FILE read, an output the snapshot's size written; the snapshot read, FILE's size written).
// Exits at the end of stdin. Progress goes to stderr.
//
//   node tests/e2e/bench-page.mjs FILE      (BITLENS_BIN: the CLI for the snapshot check)
//
// VARIANTS (comma-separated) picks the pages instead, in this order (issue 28):
//   plain  the page not cross-origin isolated: single-threaded build, no read-ahead thread
//   auto   the isolated page as a visitor gets it: what web/worker.js's `chooseBuild` picks
//   Q      the isolated page with the query Q, which forces the codec worker's choice:
//          `codec-threads=0` the single-threaded build, `codec-threads=N` the threaded build with a
//          pool of N, `codec-read-ahead=0|1` the read-ahead thread off / on (web/src/ui/io/location.rs)
// e.g. `VARIANTS='plain,codec-threads=0,codec-threads=1,codec-threads=2&codec-read-ahead=0'
// node tests/e2e/bench-page.mjs F < <(yes | head -9)`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, tempDir } from './fixtures.mjs';
import { openCodecPage, timedCompress, timedDecompress, loadOwnSnapshot, checkRestored, checkRound } from './page-codec.mjs';
import { openFloorPage } from './page-floor.mjs';

const file = path.resolve(process.argv[2]);
const DIST = process.env.DIST ?? path.join(ROOT, 'dist');
if (!fs.existsSync(path.join(DIST, 'index.html'))) throw new Error(`${DIST} has no built app: run scripts/build-web.sh`);
const threaded = fs.existsSync(path.join(DIST, 'threads', 'bitlens-wasm_bg.wasm'));
const variants = (process.env.VARIANTS ?? (threaded ? `plain,codec-threads=${os.availableParallelism()}` : 'plain')).split(',');
const plain = await startServer(DIST, 0, { isolate: false });
const isolated = await startServer(DIST, 0);
const servers = [plain, isolated];
/** The page's URL of one variant. */
function variantUrl(v) {
  const at = (server) => `http://127.0.0.1:${server.address().port}/`;
  if (v === 'plain') return at(plain);
  if (v === 'auto') return at(isolated);
  if (/^codec-[a-z-]+=\d+(&codec-[a-z-]+=\d+)*$/.test(v)) return `${at(isolated)}?${v}`;
  throw new Error(`unknown variant ${v}: plain, auto or a query such as codec-threads=2&codec-read-ahead=0`);
}
const context = await launch();
const tmp = tempDir();
const name = path.basename(file, '.safetensors');
const pages = [];
const floor = await openFloorPage(context);
let snapshot = null;
try {
  for (const variant of variants) {
    const { page, build } = await openCodecPage(context, variantUrl(variant), file);
    const tag = `${name}-${variant.replace(/[^a-z0-9]+/g, '_')}-${build.build}`;
    process.stderr.write(`bench-page: ${tag}: checking the page's snapshot and restore\n`);
    await timedCompress(page);
    const own = await loadOwnSnapshot(page, file, tmp, tag);
    snapshot ??= own;
    await timedDecompress(page);
    await checkRestored(page, file, tmp, tag);
    pages.push({ page, build: { variant, ...build } });
  }
  console.log(JSON.stringify({ ready: pages.map((p) => p.build) }));
  for await (const _ of readline.createInterface({ input: process.stdin })) {
    const round = [];
    for (const { page, build } of pages) {
      const c = await timedCompress(page);
      const d = await timedDecompress(page);
      checkRound(file, c, d);
      round.push({
        ...build,
        compress_s: c.seconds,
        decompress_s: d.seconds,
        compress_cpu_s: c.cpuSeconds,
        decompress_cpu_s: d.cpuSeconds,
        app_compress_s: c.appSeconds,
        worker_decompress_s: d.workerSeconds,
        ratio: Number(c.ratio),
      });
    }
    const size = fs.statSync(file).size;
    const floorCompress = await floor.run(file, fs.statSync(snapshot).size);
    const floorDecompress = await floor.run(snapshot, size);
    console.log(JSON.stringify({ round, floor: { compress_s: floorCompress / 1e3, decompress_s: floorDecompress / 1e3 } }));
  }
} finally {
  await floor.close();
  await context.close();
  for (const s of servers) s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
