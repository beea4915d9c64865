// The shared setup of the e2e test files: serve the built app (dist/) on 127.0.0.1 twice — with
// COOP/COEP (cross-origin isolated: the codec worker may use wasm threads) and without (as when
// embedded elsewhere: single-threaded) — launch headless Chromium, make a temp dir, and open pages
// of the app with console errors collected. `useApp()` registers the node:test hooks and returns
// the live handles.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, SHOTS, collectErrors, tempDir } from './fixtures.mjs';

const DIST = process.env.DIST ?? path.join(ROOT, 'dist');

/** True when dist/ holds the threaded build of the codec module (scripts/build-web.sh made it). */
export const THREADED = fs.existsSync(path.join(DIST, 'threads', 'bitlens-wasm_bg.wasm'));

/** One thread per core: the pool size the tests force the threaded build to (web/build-choice.js
 * picks the single-threaded build on this 2-core machine; tests of the threaded build force it). */
export const CORES = os.availableParallelism();

/** The page query that forces the threaded build with a pool of `CORES` (see web/src/ui/io/location.rs). */
export const FORCE_THREADS = `codec-threads=${CORES}`;

/** Registers before/after hooks; the returned object's `tmp` and `openApp()` work inside tests. */
export function useApp() {
  const app = { server: null, plain: null, context: null, url: null, plainUrl: null, tmp: null };
  before(async () => {
    assert.ok(fs.existsSync(path.join(DIST, 'index.html')), `${DIST} has no built app: run scripts/build-web.sh`);
    app.server = await startServer(DIST, 0);
    app.url = `http://127.0.0.1:${app.server.address().port}/`;
    app.plain = await startServer(DIST, 0, { isolate: false });
    app.plainUrl = `http://127.0.0.1:${app.plain.address().port}/`;
    app.context = await launch();
    app.tmp = tempDir();
    fs.mkdirSync(SHOTS, { recursive: true });
  });
  after(async () => {
    await app.context?.close();
    app.server?.close();
    app.plain?.close();
    if (app.tmp) fs.rmSync(app.tmp, { recursive: true, force: true });
  });
  /** A page of the app (cross-origin isolated unless `isolated: false`; with the URL query `query`,
   * e.g. FORCE_THREADS) with console errors collected in `page.errors`. */
  app.openApp = async ({ isolated = true, query = '' } = {}) => {
    const page = await app.context.newPage();
    collectErrors(page);
    await page.goto(`${isolated ? app.url : app.plainUrl}${query ? `?${query}` : ''}`);
    await page.waitForSelector('#file-input', { state: 'attached' });
    return page;
  };
  return app;
}
