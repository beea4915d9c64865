// Speed of remote checkpoints in the app (a benchmark, not a test: it prints JSON lines and asserts
// nothing). The file is served on localhost by the Range + CORS data server (another origin than the
// app); for each run a fresh page opens `?url=FILE`: the time from the URL given to the tensor
// table in the DOM (the app's performance marks), the bytes the server sent for it, then — after
// "Compute statistics for all …" — the statistics throughput over the whole file (bytes read /
// seconds, as the page reports it). Medians of RUNS (3).
//
//   node tests/e2e/bench-remote.mjs FILE      (after scripts/build-web.sh)
import path from 'node:path';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { ROOT } from './fixtures.mjs';

const file = path.resolve(process.argv[2] ?? path.join(ROOT, '.cache/weights/big-bf16.safetensors'));
const runs = Number(process.env.RUNS ?? 3);
const app = await startServer(process.env.DIST ?? path.join(ROOT, 'dist'), 0);
const appUrl = `http://127.0.0.1:${app.address().port}/`;
const data = await startRangeServer(path.dirname(file));
const url = data.url + encodeURIComponent(path.basename(file));
const context = await launch();
const results = [];

for (let r = 0; r < runs; r++) {
  data.reset();
  const page = await context.newPage();
  await page.goto(`${appUrl}?url=${encodeURIComponent(url)}`);
  await page.waitForSelector('#tensor-table tbody tr', { timeout: 60_000 });
  const table = await page.evaluate(() => {
    const t = (n) => performance.getEntriesByName(n)[0]?.startTime;
    return {
      tableMs: t('bitlens:table-visible') - t('bitlens:files-given'),
      fromNavigationMs: t('bitlens:table-visible'),
      rows: document.querySelectorAll('#tensor-table tbody tr').length,
    };
  });
  const tableBytes = data.served();
  const tableRequests = data.requests.length;
  const button = await page.$('#stats-all');
  if (button) await button.click();
  await page.waitForSelector('.progress[data-state=done]', { timeout: 600_000 });
  const p = await page.evaluate(() => ({ ...document.querySelector('.progress').dataset }));
  const m = {
    run: r + 1,
    file: path.basename(file),
    table_ms: Number(table.tableMs.toFixed(1)),
    table_from_navigation_ms: Number(table.fromNavigationMs.toFixed(1)),
    rows: table.rows,
    table_bytes: tableBytes,
    table_requests: tableRequests,
    stats_bytes: Number(p.done),
    stats_seconds: Number(p.seconds),
    stats_mb_s: Number((Number(p.done) / Number(p.seconds) / 1e6).toFixed(0)),
    served_bytes: data.served(),
    requests: data.requests.length,
    worker_memory: Number(p.memory),
  };
  results.push(m);
  console.log(JSON.stringify(m));
  await page.close();
}

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  JSON.stringify({
    median_of: runs,
    file: path.basename(file),
    table_ms: med(results.map((m) => m.table_ms)),
    stats_mb_s: med(results.map((m) => m.stats_mb_s)),
  }),
);
await context.close();
app.close();
data.close();
