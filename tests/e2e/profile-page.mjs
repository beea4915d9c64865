// A per-thread CPU profile of the app in headless Chromium (a tool, not a test): Chromium's trace
// with the V8 sampling profiler on every thread (the page and each worker), written as JSON for
// scripts/trace-summary.py to sum per thread and function (or into 50 ms steps with --timeline).
// What is traced:
//   stats  FILE given to the page until its statistics are done (the default)
//   values FILE's statistics done, TENSOR picked in Detail, then the click on the Values tab until
//          the map is drawn, then ZOOM zoom steps (+ button; 0 by default)
//   compress / decompress   one LMC compression of FILE in the Codecs view (page not isolated:
//          the single-threaded build), or one decompression of its snapshot, after an untraced
//          run of each (so the worker is warm): click to result
//
//   node tests/e2e/profile-page.mjs FILE [stats | values TENSOR | compress | decompress] > trace.json
//   python3 scripts/trace-summary.py trace.json [--timeline MS] [--top N]
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, tempDir } from './fixtures.mjs';
import { openCodecPage, timedCompress, timedDecompress, loadOwnSnapshot } from './page-codec.mjs';

const file = path.resolve(process.argv[2]);
const what = process.argv[3] ?? 'stats';
const tensor = process.argv[4];
const codec = ['compress', 'decompress'].includes(what);
if (!['stats', 'values'].includes(what) && !codec) throw new Error('usage: profile-page.mjs FILE [stats | values TENSOR | compress | decompress]');
if (what === 'values' && !tensor) throw new Error('usage: profile-page.mjs FILE values TENSOR');
const server = await startServer(path.resolve(ROOT, process.env.DIST ?? 'dist'), 0, { isolate: !codec });
const context = await launch();
const url = `http://127.0.0.1:${server.address().port}/`;
let page;
if (codec) {
  ({ page } = await openCodecPage(context, url, file));
  await timedCompress(page);
  if (what === 'decompress') {
    await loadOwnSnapshot(page, file, tempDir(), 'profile');
    await timedDecompress(page);
  }
} else {
  page = await context.newPage();
  await page.goto(url);
}
const cdp = await context.newCDPSession(page);
const events = [];
cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
const complete = new Promise((r) => cdp.on('Tracing.tracingComplete', r));
const start = () =>
  cdp.send('Tracing.start', {
    traceConfig: { includedCategories: ['devtools.timeline', 'v8.execute', 'v8', 'disabled-by-default-v8.cpu_profiler', ...(process.env.TRACE_CATEGORIES ?? '').split(',').filter(Boolean)] },
    transferMode: 'ReportEvents',
  });
const done = () => page.waitForSelector('.progress[data-state=done]', { timeout: 600_000 });
const t0 = Date.now();
if (what === 'stats') {
  await start();
  await page.setInputFiles('#file-input', file);
  await done();
} else if (codec) {
  await start();
  const r = what === 'compress' ? await timedCompress(page) : await timedDecompress(page);
  process.stderr.write(`profile-page: ${what} took ${(r.seconds * 1e3).toFixed(1)} ms on the page\n`);
} else {
  await page.setInputFiles('#file-input', file);
  await done();
  await page.click('[data-tab=detail]');
  await page.selectOption('#tensor-select', tensor);
  await page.evaluate(() => new Promise((r) => setTimeout(r, 1000)));
  await start();
  await page.click('[data-tab=values]');
  await page.waitForSelector(`#values[data-tensor="${tensor}"] #values-map[data-ready="1"]`, { timeout: 600_000 });
  for (let i = 0; i < Number(process.env.ZOOM ?? 0); i++) {
    const draws = await page.$eval('#values-map', (c) => Number(c.dataset.draws));
    await page.click('#values-zoom-in');
    await page.waitForFunction(
      (n) => {
        const c = document.querySelector('#values-map');
        return Number(c.dataset.draws) > n && c.dataset.detailPending === '0';
      },
      draws,
      { timeout: 60_000, polling: 5 },
    );
  }
}
process.stderr.write(`profile-page: ${what} traced in ${Date.now() - t0} ms\n`);
await cdp.send('Tracing.end');
await complete;
process.stdout.write(JSON.stringify(events));
await context.close();
server.close();
