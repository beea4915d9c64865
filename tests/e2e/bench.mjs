// Speed and memory of the web app in headless Chromium (a benchmark, not a test: it prints
// numbers and asserts nothing). For each file: time from the file input's change event to the
// tensor table in the DOM (performance marks set by the app), statistics throughput over the whole
// run (bytes read / seconds, as the page reports it), the largest wasm memory of any worker, the
// page's own wasm memory, and the CPU time every browser thread spent from the file given to the
// statistics done, summed by thread name (the workers' own, the page's thread, the browser's file
// reading and its IPC: on two cores these share the cores the workers need).
//
//   node tests/e2e/bench.mjs FILE [FILE...]     (RUNS=3 by default)
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT } from './fixtures.mjs';

const files = process.argv.slice(2);
const runs = Number(process.env.RUNS ?? 3);
const server = await startServer(process.env.DIST ?? path.join(ROOT, 'dist'), 0);
const url = `http://127.0.0.1:${server.address().port}/`;
const context = await launch();
const mib = (b) => (b / (1 << 20)).toFixed(0);

/** Nanoseconds of CPU time each thread name of the browser's processes has run, summed. */
function browserThreadsNs() {
  const ns = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!/chrom/i.test(fs.readFileSync(`/proc/${pid}/comm`, 'utf8'))) continue;
      for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        const run = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        ns.set(name, (ns.get(name) ?? 0) + run);
      }
    } catch {
      // gone meanwhile
    }
  }
  return ns;
}

for (const file of files) {
  const results = [];
  for (let r = 0; r < runs; r++) {
    const page = await context.newPage();
    if (process.env.WORKERS) {
      // Override the pool size the app reads from navigator.hardwareConcurrency.
      await page.addInitScript((n) => Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => n }), Number(process.env.WORKERS));
    }
    await page.goto(url);
    await page.waitForSelector('#file-input', { state: 'attached' });
    const cpuBefore = browserThreadsNs();
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('.progress[data-state=done]', { timeout: 600_000 });
    const cpuAfter = browserThreadsNs();
    const cpu = [...cpuAfter]
      .map(([name, ns]) => [name, (ns - (cpuBefore.get(name) ?? 0)) / 1e6])
      .filter(([, ms]) => ms >= 5)
      .sort((a, b) => b[1] - a[1]);
    const m = await page.evaluate(async () => {
      const t = (n) => performance.getEntriesByName(n)[0]?.startTime;
      const p = document.querySelector('.progress').dataset;
      return {
        tableMs: t('bitlens:table-visible') - t('bitlens:files-given'),
        bytes: Number(p.done),
        seconds: Number(p.seconds),
        workerMemory: Number(p.memory),
        mainMemory: Number(p.mainMemory),
        rows: document.querySelectorAll('#tensor-table tbody tr').length,
        isolated: self.crossOriginIsolated,
      };
    });
    results.push(m);
    console.log(
      `${path.basename(file)} run ${r + 1}: table ${m.tableMs.toFixed(1)} ms (${m.rows} rows), ` +
        `stats ${(m.bytes / 1e6).toFixed(0)} MB in ${m.seconds.toFixed(2)} s = ${(m.bytes / m.seconds / 1e6).toFixed(0)} MB/s, ` +
        `wasm memory: worker max ${mib(m.workerMemory)} MiB, page ${mib(m.mainMemory)} MiB; ` +
        `browser CPU ms by thread, file given to done: ${cpu.map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(', ')}`,
    );
    await page.close();
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `${path.basename(file)} median of ${runs}: table ${med(results.map((m) => m.tableMs)).toFixed(1)} ms, ` +
      `${med(results.map((m) => m.bytes / m.seconds / 1e6)).toFixed(0)} MB/s, ` +
      `worker wasm max ${mib(Math.max(...results.map((m) => m.workerMemory)))} MiB, ` +
      `page wasm max ${mib(Math.max(...results.map((m) => m.mainMemory)))} MiB`,
  );
}
await context.close();
server.close();
