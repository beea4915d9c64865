// The embed's first render and download size (a benchmark, not a test: it prints JSON lines and
// asserts nothing). Three origins on 127.0.0.1 as in tests/e2e/embed.test.mjs: the data (Range +
// CORS), the embed's files (dist/embed/, CORS) and the example host page. Each run is a fresh
// browser profile (cold cache): the time from the host page importing bitlens-embed.js to the
// element's first tensor-table row (checked every animation frame), and to its `bitlens-load`
// event, with the bytes the data server sent. Then the gzip (-9) size of what the page loads
// (script + the app's JS and wasm) and of what each statistics worker loads.
//
//   node tests/e2e/bench-embed.mjs FILE     (RUNS=3 by default; FILE: a .safetensors file)
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { ROOT, tempDir } from './fixtures.mjs';

const file = path.resolve(process.argv[2] ?? path.join(ROOT, '.cache/weights/big-bf16.safetensors'));
const runs = Number(process.env.RUNS ?? 3);
const EMBED = path.join(ROOT, process.env.DIST ?? 'dist', 'embed');
const dir = tempDir();
fs.symlinkSync(file, path.join(dir, path.basename(file)));
const data = await startRangeServer(dir);
const embed = await startServer(EMBED, 0, { isolate: false, cors: true });
const host = await startServer(path.join(ROOT, 'web/examples'), 0, { isolate: false });
const q = new URLSearchParams({
  embed: `http://127.0.0.1:${embed.address().port}/bitlens-embed.js`,
  src: `${data.url}${path.basename(file)}`,
});
const hostUrl = `http://127.0.0.1:${host.address().port}/host.html?${q}`;

for (let r = 0; r < runs; r++) {
  const context = await launch();
  const page = await context.newPage();
  await page.addInitScript(() => {
    const tick = () => {
      if (document.querySelector('#view')?.shadowRoot?.querySelector('#tensor-table tbody tr')) {
        window.__bitlensTableAt = performance.now();
      } else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  data.reset();
  await page.goto(hostUrl);
  await page.waitForFunction(() => window.__bitlensTableAt !== undefined, null, { timeout: 60_000 });
  await page.waitForFunction(() => window.bitlensEvents.some((e) => e.type === 'bitlens-load'), null, { timeout: 60_000 });
  const m = await page.evaluate(() => ({
    importAt: performance.getEntriesByName('bitlens:embed-import')[0].startTime,
    tableAt: window.__bitlensTableAt,
    loadAt: window.bitlensEvents.find((e) => e.type === 'bitlens-load').at,
    rows: document.querySelector('#view').shadowRoot.querySelectorAll('#tensor-table tbody tr').length,
  }));
  console.log(
    JSON.stringify({
      bench: 'embed-first-render',
      run: r + 1,
      file: path.basename(file),
      file_bytes: fs.statSync(file).size,
      cold_cache: true,
      script_to_table_ms: Number((m.tableAt - m.importAt).toFixed(1)),
      script_to_load_event_ms: Number((m.loadAt - m.importAt).toFixed(1)),
      navigation_to_table_ms: Number(m.tableAt.toFixed(1)),
      rows: m.rows,
      data_bytes_served: data.served(),
    }),
  );
  await context.close();
}

/** Raw and gzip -9 bytes of files of the embed. */
function size(names) {
  let raw = 0;
  let gzip = 0;
  for (const n of names) {
    const bytes = fs.readFileSync(path.join(EMBED, n));
    raw += bytes.length;
    gzip += zlib.gzipSync(bytes, { level: 9 }).length;
  }
  return { files: names, raw_bytes: raw, gzip_bytes: gzip };
}
const page = size(['bitlens-embed.js', 'bitlens-web.js', 'bitlens-web_bg.wasm']);
const worker = size(['worker.js', 'bitlens-wasm.js', 'bitlens-wasm_bg.wasm']);
console.log(JSON.stringify({ bench: 'embed-download', part: 'page', ...page }));
console.log(JSON.stringify({ bench: 'embed-download', part: 'worker (single-threaded, loaded once, cached for the others)', ...worker }));
console.log(JSON.stringify({ bench: 'embed-download', part: 'total', gzip_bytes: page.gzip_bytes + worker.gzip_bytes, limit_gzip_bytes: 1.5e6 }));

for (const s of [data, embed, host]) s.close();
fs.rmSync(dir, { recursive: true, force: true });
