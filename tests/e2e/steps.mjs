// Steps the codec tests share: the native CLI and byte comparisons on the node side, and page
// actions of the Codecs view (pick a preset and base, compress, save downloads).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BITLENS } from './fixtures.mjs';

/** Runs the native CLI; returns its stdout (throws with stderr on failure). */
export function cli(...args) {
  return execFileSync(BITLENS, args, { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Asserts that two files hold the same bytes. */
export function sameBytes(a, b, what) {
  const x = fs.readFileSync(a);
  const y = fs.readFileSync(b);
  assert.equal(x.length, y.length, `${what}: ${x.length} vs ${y.length} bytes`);
  assert.ok(x.equals(y), `${what}: bytes differ`);
}

/** Clicks a download link and saves the file to `out`. */
export async function download(page, selector, out) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  await dl.saveAs(out);
  return { out, suggested: dl.suggestedFilename() };
}

/** Clicks a "Download all" button expecting `count` downloads; saves them in `dir` under their suggested names. */
export async function downloadAll(page, selector, count, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const seen = [];
  const done = new Promise((resolve) => {
    const onDownload = (dl) => {
      seen.push(dl.saveAs(path.join(dir, dl.suggestedFilename())).then(() => dl.suggestedFilename()));
      if (seen.length === count) {
        page.off('download', onDownload);
        resolve();
      }
    };
    page.on('download', onDownload);
  });
  await page.click(selector);
  await done;
  return Promise.all(seen);
}

/** Selects the option of `select` whose text is `text`. */
export async function selectByText(page, select, text) {
  const value = await page.$eval(select, (s, t) => [...s.options].find((o) => o.textContent.trim() === t)?.value, text);
  assert.ok(value !== undefined, `${select} has an option ${text}`);
  await page.selectOption(select, value);
}

/** Picks a codec preset (and a base checkpoint by name, or none), compresses the active checkpoint, and returns the result's data attributes. */
export async function compress(page, preset, baseName = null) {
  await page.click('[data-tab=codecs]');
  await page.selectOption('#codec-select', preset);
  if (baseName) await selectByText(page, '#base-select', `XOR delta against ${baseName}`);
  else await page.selectOption('#base-select', '');
  return clickCompress(page);
}

/** Clicks Compress (Codecs view open) and waits for a new result; returns its data attributes. */
export async function clickCompress(page, timeout = 300_000) {
  const before = await page.evaluate(() => document.querySelector('#compress-result')?.dataset.seconds ?? null);
  await page.click('#compress-button');
  await page.waitForFunction((b) => {
    const r = document.querySelector('#compress-result');
    return r && r.dataset.seconds !== b && !document.querySelector('.codec-progress');
  }, before, { timeout });
  return page.$eval('#compress-result', (r) => ({ ...r.dataset }));
}

/** Decompresses the (first) snapshot in the Codecs view and saves the restored file to `out`. */
export async function decompressFirst(page, out) {
  await page.click('.snapshot .decompress-button');
  await page.waitForSelector('.snapshot .decompress-download', { timeout: 300_000 });
  return download(page, '.snapshot .decompress-download', out);
}
