// The weight map's speed (a benchmark, not a test: it prints JSON lines and asserts nothing). The
// app in headless Chromium is given FILE (a safetensors file; scripts/bench-web.sh makes one with
// a 100.7 M-value bf16 matrix, tests/python/make_big_matrix.py), computes every tensor's
// statistics, picks TENSOR in Detail, then opens the Values view: the time from the click on the
// tab to the map on screen (the base tile of the whole tensor computed in the map's workers and
// drawn), and each zoom step (+ button at the centre) until the map shows single values: the time from the click to the
// picture of the new view drawn with the detail tile it needed. The floor beside it: the page
// reading the tensor's bytes with `Blob.slice().arrayBuffer()` (no computation), in the same run.
//
//   node tests/e2e/bench-values.mjs FILE [TENSOR=big.weight]     (RUNS=3 by default)
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, tensorRange } from './fixtures.mjs';

const file = path.resolve(process.argv[2]);
const tensor = process.argv[3] ?? 'big.weight';
const runs = Number(process.env.RUNS ?? 3);
const server = await startServer(path.join(ROOT, process.env.DIST ?? 'dist'), 0);
const url = `http://127.0.0.1:${server.address().port}/`;

const r = tensorRange(file, tensor);
const context = await launch();
for (let run = 0; run < runs; run++) {
  const page = await context.newPage();
  await page.goto(url);
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('.progress[data-state=done]', { timeout: 600_000 });
  // The floor: the tensor's bytes read by the page, nothing computed (the same file given to an
  // input of the benchmark's own: the app's input is cleared once it took the files).
  await page.evaluate(() => {
    const i = document.createElement('input');
    i.type = 'file';
    i.id = 'bench-file';
    i.hidden = true;
    document.body.append(i);
  });
  await page.setInputFiles('#bench-file', file);
  const floorMs = await page.evaluate(async ({ start, end }) => {
    const f = document.getElementById('bench-file').files[0];
    const t0 = performance.now();
    const b = await f.slice(start, end).arrayBuffer();
    if (b.byteLength !== end - start) throw new Error('short read');
    return performance.now() - t0;
  }, r);
  // The tensor is picked first (in Detail), so opening Values starts its map: the clock runs from
  // the click on the tab.
  await page.click('[data-tab=detail]');
  await page.selectOption('#tensor-select', tensor);
  // Detail draws the tensor's charts: the clock starts once the page is idle again.
  await page.evaluate(() => new Promise((r) => setTimeout(r, 1000)));
  // In the page: from the click's event to the map drawn (the canvas's data-ready set, seen by a
  // MutationObserver), without the test driver's own latency.
  await page.evaluate(() => {
    window.benchShown = new Promise((resolve) => {
      let clicked = 0;
      document.addEventListener('click', (e) => {
        if (e.target.closest('[data-tab=values]')) clicked = performance.now();
      }, { capture: true });
      new MutationObserver(() => {
        const c = document.querySelector('#values-map');
        if (clicked && c?.dataset.ready === '1') resolve(performance.now() - clicked);
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-ready'] });
    });
  });
  const t0 = Date.now();
  await page.click('[data-tab=values]');
  await page.waitForSelector(`#values[data-tensor="${tensor}"] #values-map[data-ready="1"]`, { timeout: 600_000 });
  const shownMs = Date.now() - t0;
  const shownInPage = await page.evaluate(() => window.benchShown);
  const state = await page.$eval('#values-map', (c) => ({ ...c.dataset }));
  const steps = [];
  for (let i = 0; i < 40; i++) {
    const before = await page.$eval('#values-map', (c) => ({ ...c.dataset }));
    if (before.detailBlock === '1x1') break;
    await page.evaluate(() => {
      window.benchClicked = 0;
      document.addEventListener('click', (e) => {
        if (e.target.closest('#values-zoom-in')) window.benchClicked = performance.now();
      }, { capture: true, once: true });
    });
    const s0 = Date.now();
    await page.click('#values-zoom-in');
    // In the page: the click's event to the picture drawn (polled every 5 ms).
    const inPage = await page.waitForFunction(
      (n) => {
        const c = document.querySelector('#values-map');
        const done = Number(c.dataset.draws) > n && c.dataset.detailPending === '0';
        return done && window.benchClicked ? performance.now() - window.benchClicked : 0;
      },
      Number(before.draws),
      { timeout: 60_000, polling: 5 },
    );
    const ms = Date.now() - s0;
    const after = await page.$eval('#values-map', (c) => ({ ...c.dataset }));
    steps.push({ ms, in_page_ms: Math.round(await inPage.jsonValue()), zoom: Number(after.zoom), detail_block: after.detailBlock, detail_ms: Number(after.detailMs || 0) });
  }
  console.log(
    JSON.stringify({
      run,
      tensor,
      dtype: r.dtype,
      shape: r.shape,
      values: r.shape.reduce((a, b) => a * b, 1),
      tensor_bytes: r.end - r.start,
      floor_read_ms: Math.round(floorMs),
      map_shown_ms: shownMs,
      map_shown_in_page_ms: Math.round(shownInPage),
      map_request_ms: Number(state.baseMs),
      map_worker_ms: Number(state.baseWorkerMs),
      base_block: state.baseBlock,
      zoom_steps: steps.length,
      zoom_max_ms: Math.max(...steps.map((s) => s.ms)),
      zoom_median_ms: steps.map((s) => s.ms).sort((a, b) => a - b)[Math.floor(steps.length / 2)],
      zoom_in_page_max_ms: Math.max(...steps.map((s) => s.in_page_ms)),
      zoom_in_page_median_ms: steps.map((s) => s.in_page_ms).sort((a, b) => a - b)[Math.floor(steps.length / 2)],
      steps,
    }),
  );
  await page.close();
}
await context.close();
server.close();
