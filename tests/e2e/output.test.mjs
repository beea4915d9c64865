// End-to-end tests of where the page's compress / decompress outputs live: the codec worker writes
// each output file into this page's directory of the origin private file system
// (`bitlens-output/<session>`, web/worker.js, crates/wasm/src/worker/opfs.rs) and the page offers
// that `File` for download. Checked: the downloads are the CLI's bytes and are the files there; a
// replaced output's file is removed; a page's directory survives while the page lives and is
// removed by the next page's codec worker once the page is gone. Both builds (isolated page: the
// threaded one when made; plain page: single-threaded).
//
//   node --test tests/e2e/output.test.mjs   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp, FORCE_THREADS } from './harness.mjs';
import { WEIGHTS } from './fixtures.mjs';
import { cli, sameBytes, download, compress, decompressFirst } from './steps.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
// Outputs larger than the page's fold size for posted chunks (64 MiB): 74 MB compressed, 91 MB restored.
const F32 = path.join(WEIGHTS, 'minilm-f32.safetensors');

const app = useApp();

/** Every output directory of the page's origin: `{session: {file: bytes}}`. */
function outputs(page) {
  return page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    let all;
    try {
      all = await root.getDirectoryHandle('bitlens-output');
    } catch {
      return {};
    }
    const found = {};
    for await (const [session, dir] of all.entries()) {
      found[session] = {};
      for await (const [name, file] of dir.entries()) found[session][name] = (await file.getFile()).size;
    }
    return found;
  });
}

/** Waits until the page's origin has exactly the output files `sizes` (any names), in one directory; returns its name. */
async function waitForOutputs(page, sizes) {
  const want = [...sizes].sort((a, b) => a - b);
  let seen;
  for (let i = 0; i < 100; i++) {
    seen = await outputs(page);
    const dirs = Object.entries(seen).filter(([, files]) => Object.keys(files).length > 0);
    const got = dirs.flatMap(([, files]) => Object.values(files)).sort((a, b) => a - b);
    if (dirs.length === 1 && JSON.stringify(got) === JSON.stringify(want)) return dirs[0][0];
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`output files ${JSON.stringify(seen)}, expected sizes ${want}`);
}

/** A page of the app with `file` loaded, the codec view open and its codec worker ready; an
 * isolated one forced to the threaded build (whose writes come from shared wasm memory). */
async function codecPage(isolated, file = BF16) {
  const page = await app.openApp({ isolated, query: isolated ? FORCE_THREADS : '' });
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click('[data-tab=codecs]');
  await page.waitForSelector('#codec-build[data-build]', { timeout: 60_000 });
  return page;
}

for (const isolated of [true, false]) {
  test(`outputs are files of the page's output directory, the CLI's bytes, removed when replaced (${isolated ? 'isolated' : 'plain'} page)`, { timeout: 300_000 }, async () => {
    const page = await codecPage(isolated, F32);
    const first = await compress(page, 'lmc');
    const session = await waitForOutputs(page, [Number(first.out)]);
    // Compressed again: the first snapshot's file is removed with its download.
    const again = await compress(page, 'lmc');
    assert.equal(await waitForOutputs(page, [Number(again.out)]), session);
    const tag = isolated ? 'isolated' : 'plain';
    const { out } = await download(page, '#compress-download', path.join(app.tmp, `out-${tag}.bls`));
    const native = path.join(app.tmp, `out-${tag}-cli.bls`);
    cli('--threads', '1', 'compress', F32, '-o', native, '--codec', 'lmc');
    sameBytes(out, native, 'page snapshot vs CLI snapshot');
    // The snapshot decompressed in the page: its restored file joins it in the directory.
    await page.setInputFiles('#file-input', out);
    await page.waitForSelector('.snapshot .decompress-button:not([disabled])', { timeout: 60_000 });
    const restored = await decompressFirst(page, path.join(app.tmp, `restored-${tag}.safetensors`));
    sameBytes(restored.out, F32, 'page restore vs the original');
    assert.equal(await waitForOutputs(page, [Number(again.out), fs.statSync(F32).size]), session);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
}

test("a page's output directory outlives its codec workers and goes with the page", { timeout: 300_000 }, async () => {
  const a = await codecPage(true);
  const r = await compress(a, 'lmc');
  const sessionA = await waitForOutputs(a, [Number(r.out)]);
  // Another page of the origin starts its codec worker: page A lives, so its directory stays.
  const b = await codecPage(true);
  const seen = await outputs(b);
  assert.deepEqual(Object.values(seen[sessionA] ?? {}), [Number(r.out)], JSON.stringify(seen));
  const sessions = Object.keys(seen).filter((s) => s !== sessionA);
  assert.equal(sessions.length, 1, `page B's directory: ${JSON.stringify(seen)}`);
  await a.close();
  // Page A is gone (its lock let go): the next codec worker of the origin removes its directory.
  const c = await codecPage(true);
  const after = await outputs(c);
  assert.equal(after[sessionA], undefined, JSON.stringify(after));
  assert.ok(sessions[0] in after, `page B's directory stays: ${JSON.stringify(after)}`);
  assert.deepEqual([...b.errors, ...c.errors], []);
  await b.close();
  await c.close();
});
