// The page's LMC codec alone against the native one, on every FILE, in the same run (issue 28:
// "the page's codec alone ≥ 0.6× the native codec"). A benchmark, not a test: it prints numbers
// and checks only that both sides made the same ratio.
//
// Each round, alternately on each FILE:
// - native: `bitlens --threads 1 bench FILE --codecs lmc --repeat 1 --json`, every tensor through
//   LMC in memory, one thread (its `compress_mb_s` / `decompress_mb_s`);
// - page: the single-threaded wasm module the page's codec worker runs (dist/bitlens-wasm.js), in
//   headless Chromium, every tensor through `codecRoundtrip` (LMC, in memory, compute only: the
//   wasm's own encode and decode time), as `bitlens bench` does natively.
// Prints per file the fastest and median round of each side in MB/s of the tensors' bytes, and
// page ÷ native (fastest by fastest, median by median). Fails when the two sides' ratios differ
// (the same encoder must write the same bytes).
//
//   DIST=dist RUNS=5 node tests/e2e/bench-codec-alone.mjs FILE...
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { BITLENS, ROOT } from './fixtures.mjs';
import { codecAloneRounds } from './page-codec.mjs';

const files = process.argv.slice(2);
const runs = Number(process.env.RUNS ?? 5);
const DIST = process.env.DIST ?? path.join(ROOT, 'dist');
const LINK = 'bench-codec-alone-input.safetensors';

const best = (xs) => Math.max(...xs);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One native round: (compress, decompress) MB/s and the ratio. */
function nativeRound(file) {
  const out = execFileSync(BITLENS, ['--threads', '1', 'bench', file, '--codecs', 'lmc', '--repeat', '1', '--json'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const r = JSON.parse(out).results[0];
  return { enc: r.compress_mb_s, dec: r.decompress_mb_s, ratio: r.ratio };
}

const server = await startServer(DIST, 0, { isolate: false });
const context = await launch();
const page = await context.newPage();
// Any file of the app gives the page its origin (the module and the input are fetched from it);
// the app itself is not started.
await page.goto(`http://127.0.0.1:${server.address().port}/build-choice.js`);
const link = path.join(DIST, LINK);
try {
  for (const file of files) {
    fs.rmSync(link, { force: true });
    fs.symlinkSync(path.resolve(file), link);
    const native = [];
    const inPage = [];
    for (let r = 0; r < runs; r++) {
      native.push(nativeRound(file));
      inPage.push((await codecAloneRounds(page, `/${LINK}`, 1))[0]);
    }
    const side = (xs, k) => ({ best: best(xs.map((x) => x[k])), median: median(xs.map((x) => x[k])) });
    const [n, p] = [native, inPage].map((xs) => ({ compress: side(xs, 'enc'), decompress: side(xs, 'dec'), ratio: xs[0].ratio }));
    if (Math.abs(n.ratio - p.ratio) > 1e-9) {
      throw new Error(`${file}: ratio ${n.ratio} natively but ${p.ratio} in the page`);
    }
    const over = (k, s) => (p[k][s] / n[k][s]).toFixed(2);
    const f = (x) => x.toFixed(0);
    console.log(
      `${path.basename(path.dirname(file))}/${path.basename(file)}: ` +
        `native ${f(n.compress.best)} / ${f(n.decompress.best)} MB/s, page ${f(p.compress.best)} / ${f(p.decompress.best)} MB/s, ` +
        `page ÷ native ${over('compress', 'best')} / ${over('decompress', 'best')} ` +
        `(median ${over('compress', 'median')} / ${over('decompress', 'median')}), ratio ${n.ratio.toFixed(4)}`,
    );
  }
} finally {
  fs.rmSync(link, { force: true });
  await context.close();
  server.close();
}
