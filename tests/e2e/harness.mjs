// The shared setup of the e2e test files: serve the built app (dist/) on 127.0.0.1 twice — with
// COOP/COEP (cross-origin isolated: the codec worker may use wasm threads) and without (as when
// embedded elsewhere: single-threaded) — launch headless Chromium, make a temp dir, and open pages
// of the app with console errors collected. `useApp()` registers the node:test hooks and returns
// the live handles.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { launch } from './browser.mjs';
import { ROOT, SHOTS, collectErrors, tempDir } from './fixtures.mjs';

const DIST = process.env.DIST ?? path.join(ROOT, 'dist');

/** True when dist/ holds the threaded build of the codec module (scripts/build-web.sh made it). */
export const THREADED = fs.existsSync(path.join(DIST, 'threads', 'bitlens-wasm_bg.wasm'));

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
  /** A page of the app (cross-origin isolated unless `isolated: false`) with console errors collected in `page.errors`. */
  app.openApp = async ({ isolated = true } = {}) => {
    const page = await app.context.newPage();
    collectErrors(page);
    await page.goto(isolated ? app.url : app.plainUrl);
    await page.waitForSelector('#file-input', { state: 'attached' });
    return page;
  };
  return app;
}
