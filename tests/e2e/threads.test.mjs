// End-to-end tests of the two builds of the codec module (headless Chromium, real weights): on a
// cross-origin isolated page the codec worker runs the threaded build (PLMC on a rayon pool of
// workers sharing wasm memory), without isolation — a page embedding the app elsewhere — it falls
// back to the single-threaded build. Both write snapshots identical to the CLI's byte for byte:
// the format cuts PLMC segments at a fixed size, so the thread count never changes the output.
//
//   node --test tests/e2e/        (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp, THREADED, CORES, FORCE_THREADS } from './harness.mjs';
import { WEIGHTS, SHOTS } from './fixtures.mjs';
import { cli, sameBytes, download, compress, decompressFirst } from './steps.mjs';

const F16 = path.join(WEIGHTS, 'minilm-f16.safetensors');

const app = useApp();

/** The codec worker's report: opens the Codecs view and waits for the worker to load its module. */
async function codecBuild(page) {
  await page.click('[data-tab=codecs]');
  await page.waitForSelector('#codec-build[data-build]', { timeout: 60_000 });
  return page.$eval('#codec-build', (e) => ({ ...e.dataset, text: e.textContent }));
}

/** Whether the codec worker has started its read-ahead thread (web/reader.js): it has once the
 * worker announced its build. */
async function readAheadStarted(page) {
  return page.workers().some((w) => new URL(w.url()).pathname.endsWith('/reader.js'));
}

/** Compresses F16 with LMC in the page and checks the snapshot against the CLI's; returns the result. */
async function compressLikeCli(page, name) {
  const r = await compress(page, 'lmc');
  const { out } = await download(page, '#compress-download', path.join(app.tmp, `${name}.bls`));
  const native = path.join(app.tmp, 'cli-f16.bls');
  if (!fs.existsSync(native)) cli('compress', F16, '-o', native);
  sameBytes(out, native, `${name} snapshot vs CLI snapshot`);
  return r;
}

test('cross-origin isolated: the codec worker runs the threaded build, bytes identical to the CLI', { timeout: 300_000 }, async (t) => {
  if (!THREADED) {
    t.skip('no dist/threads: the threaded build was skipped (no nightly with rust-src; see scripts/build-web.sh)');
    return;
  }
  // Forced (on this 2-core machine the rule picks the single-threaded build; see below).
  const page = await app.openApp({ query: FORCE_THREADS });
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
  await page.setInputFiles('#file-input', F16);
  await page.waitForSelector('#tensor-table tbody tr');
  const build = await codecBuild(page);
  assert.equal(build.build, 'threads');
  assert.equal(Number(build.threads), CORES);
  assert.match(build.reason, new RegExp(`forced by the page's \\?${FORCE_THREADS}`));
  assert.equal(await readAheadStarted(page), true, 'the read-ahead thread runs beside the pool');
  const r = await compressLikeCli(page, 'page-threads');
  assert.equal(r.build, 'threads');
  assert.equal(Number(r.threads), CORES);
  await page.screenshot({ path: path.join(SHOTS, 'codecs-threads.png'), fullPage: true });
  // Decompression runs on the pool too: the CLI's snapshot restores byte for byte.
  await page.setInputFiles('#file-input', path.join(app.tmp, 'cli-f16.bls'));
  await page.waitForSelector('.snapshot .decompress-button:not([disabled])');
  const got = await decompressFirst(page, path.join(app.tmp, 'page-threads-f16.safetensors'));
  sameBytes(got.out, F16, 'threaded page restore of the CLI snapshot');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('cross-origin isolated, nothing forced: the build the rule picks for this machine, and why', { timeout: 300_000 }, async (t) => {
  if (!THREADED) {
    t.skip('no dist/threads: the threaded build was skipped (no nightly with rust-src; see scripts/build-web.sh)');
    return;
  }
  const page = await app.openApp();
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
  await page.setInputFiles('#file-input', F16);
  await page.waitForSelector('#tensor-table tbody tr');
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const build = await codecBuild(page);
  if (cores <= 2) {
    // Measured on this machine (BENCHMARKS.md, "Threads in the page (issue 28)"): with two cores the
    // single-threaded build without helper threads is the faster, as on a page that is not isolated.
    assert.equal(build.build, 'single');
    assert.equal(build.threads, '1');
    assert.match(build.text, new RegExp(`single-threaded build \\(${cores} cores?: helper threads would share them with the codec`));
    // No read-ahead thread either: the codec worker started no worker of its own.
    assert.equal(await readAheadStarted(page), false);
  } else {
    assert.equal(build.build, 'threads');
    assert.equal(Number(build.threads), cores - 1);
    assert.match(build.text, new RegExp(`${cores} cores: a pool of ${cores - 1}`));
  }
  const r = await compressLikeCli(page, 'page-auto');
  assert.equal(r.build, build.build);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('not cross-origin isolated: the single-threaded build, bytes identical to the CLI', { timeout: 300_000 }, async () => {
  const page = await app.openApp({ isolated: false });
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
  await page.setInputFiles('#file-input', F16);
  await page.waitForSelector('#tensor-table tbody tr');
  const build = await codecBuild(page);
  assert.equal(build.build, 'single');
  assert.equal(build.threads, '1');
  assert.match(build.text, /not cross-origin isolated/);
  const r = await compressLikeCli(page, 'page-single');
  assert.equal(r.build, 'single');
  assert.deepEqual(page.errors, []);
  await page.close();
});
