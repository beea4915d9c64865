// End-to-end tests of the teaching lessons (issue 14) in headless Chromium: each deep link
// (#learn/float, #learn/huffman, #learn/ans) loads the bundled demo by itself and renders its
// charts without page errors; a flipped bit shows the value the format's bits give (decoded here
// with DataView and a small fp16 decoder); the encoder bytes of every block add up to the group's
// LMC stream the lesson reports; stepping rANS changes the state and decoding ends in the input.
//
//   node --test tests/e2e/learn.test.mjs      (after scripts/build-web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useApp } from './harness.mjs';
import { ROOT, BITLENS, SHOTS } from './fixtures.mjs';

const app = useApp();
const TENSOR = 'encoder.layer.0.attention.self.key.weight';
const DEMO = path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors');

/** A safetensors file holding only tensor `name` of `src`. */
function oneTensor(src, name, out) {
  const buf = fs.readFileSync(src);
  const n = Number(buf.readBigUInt64LE(0));
  const t = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))[name];
  const data = buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
  const json = Buffer.from(JSON.stringify({ [name]: { dtype: t.dtype, shape: t.shape, data_offsets: [0, data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(out, Buffer.concat([len, json, data]));
  return { file: out, bytes: data.length };
}

/** A page of the app opened at `hash`, once the lesson has read its tensor. */
async function openLesson(hash, ready) {
  const page = await app.context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
  });
  await page.goto(`${app.url}${hash}`);
  await page.waitForSelector(ready, { timeout: 60_000 });
  return page;
}

/** The f32 value of a bit pattern. */
function f32(bits) {
  const v = new DataView(new ArrayBuffer(4));
  v.setUint32(0, bits >>> 0);
  return v.getFloat32(0);
}

/** The value of an IEEE half bit pattern. */
function f16(bits) {
  const s = bits >> 15 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function sameValue(a, b, what) {
  assert.ok(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)), `${what}: page ${a} vs ${b}`);
}

test('float: a deep link renders, flipping bits gives the value of the new bits', { timeout: 120_000 }, async () => {
  const page = await openLesson(`#learn/float?tensor=${TENSOR}&index=5`, '#exponent-entropy');
  assert.equal(await page.locator('tr.format-row').count(), 5);
  // The weight of the link: element 5 of the bf16 tensor, exact in its own format.
  assert.match(await page.textContent('#float-source'), /element 5 of encoder\.layer\.0\.attention\.self\.key\.weight/);
  // Its bits are element 5 of the tensor in the demo file, read here.
  const buf = fs.readFileSync(DEMO);
  const n = Number(buf.readBigUInt64LE(0));
  const t = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))[TENSOR];
  const element5 = buf.readUInt16LE(8 + n + t.data_offsets[0] + 5 * 2);
  assert.equal(Number(await page.getAttribute('tr[data-format=bf16]', 'data-bits')), element5);
  sameValue(Number(await page.getAttribute('tr[data-format=bf16]', 'data-value')), f32(element5 << 16), 'element 5');
  const bf16Err = await page.getAttribute('tr[data-format=bf16] td.rounding', 'data-abs-error');
  assert.equal(Number(bf16Err), 0);
  const entropy = Number(await page.getAttribute('#exponent-entropy', 'data-bits'));
  assert.ok(entropy > 0 && entropy < 8, `exponent entropy ${entropy}`);
  for (const [format, bit, decode] of [['f32', 30, f32], ['f32', 3, f32], ['bf16', 14, (b) => f32(b << 16)], ['f16', 12, f16], ['f16', 0, f16]]) {
    const row = `tr[data-format=${format}]`;
    const before = Number(await page.getAttribute(row, 'data-bits'));
    await page.click(`${row} button.bit[data-bit="${bit}"]`);
    const after = Number(await page.getAttribute(row, 'data-bits'));
    assert.equal(after, (before ^ (1 << bit)) >>> 0, `${format} bit ${bit} flipped`);
    sameValue(Number(await page.getAttribute(row, 'data-value')), decode(after), `${format} after flipping bit ${bit}`);
    assert.equal(Number(await page.getAttribute('#flip-note', 'data-after-bits')), after);
  }
  // A typed value: fp16 overflows to ∞, E4M3 (no ∞) to NaN, fp32 holds it.
  await page.fill('#float-value', '70000');
  assert.equal(await page.getAttribute('tr[data-format=f16]', 'data-class'), 'infinity');
  assert.equal(await page.getAttribute('tr[data-format=e4m3]', 'data-class'), 'nan');
  sameValue(Number(await page.getAttribute('tr[data-format=f32]', 'data-value')), 70000, 'f32 of 70000');
  await page.click('#ex-subnormal');
  assert.equal(await page.getAttribute('tr[data-format=f16]', 'data-class'), 'subnormal');
  sameValue(Number(await page.getAttribute('tr[data-format=f16]', 'data-value')), f16(1), 'smallest f16 subnormal');
  // The link holds the typed value; the presentation toggle classes the lesson root.
  assert.match(await page.evaluate(() => location.hash), /^#learn\/float\?tensor=.*&value=70000$/);
  await page.click('#present-toggle');
  assert.ok(await page.locator('.learn.presenting').count());
  await page.screenshot({ path: path.join(SHOTS, 'learn-float-presenting.png'), fullPage: true });
  await page.click('#present-toggle');
  await page.screenshot({ path: path.join(SHOTS, 'learn-float.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('huffman: block encoder bytes add up to the group LMC stream, keys step blocks', { timeout: 180_000 }, async () => {
  const page = await openLesson(`#learn/huffman?tensor=${TENSOR}&group=1&block=1`, '#huffman-group-figures');
  for (const chart of ['huffman-histogram', 'huffman-tree', 'huffman-blocks']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  assert.equal(await page.getAttribute('#lesson-huffman', 'data-block'), '1');
  assert.equal(await page.locator('[data-chart="huffman-histogram"] rect.bar').count(), 256);
  // The histogram's counts add up to the block's length.
  const counts = await page.$$eval('[data-chart="huffman-histogram"] rect.bar', (els) => els.map((e) => Number(e.dataset.value)));
  const blockLen = counts.reduce((a, b) => a + b, 0);
  assert.ok(blockLen > 0);
  await page.screenshot({ path: path.join(SHOTS, 'learn-huffman.png'), fullPage: true });
  let allBlocks = 0;
  for (const group of ['1', '0']) {
    await page.selectOption('#huffman-group', group);
    await page.waitForSelector(`#lesson-huffman[data-group="${group}"]`);
    const fig = page.locator('#huffman-group-figures');
    const stream = Number(await fig.getAttribute('data-group-encoder-bytes'));
    // Every block coded alone by the encoder (its bars), summed here, equals the group coded as
    // one LMC stream (compare_tables) minus its layout byte.
    const perBlock = await page.$$eval('[data-chart="huffman-blocks"] rect.bar', (els) => els.map((e) => Number(e.dataset.value)));
    assert.ok(perBlock.length >= 2, 'several blocks');
    assert.equal(perBlock.reduce((a, b) => a + b, 0), stream, `group ${group}: Σ blocks vs stream`);
    allBlocks += stream;
    // Each block's shown encoder bytes equal its bar; → and ← step the blocks.
    // Keys act outside form fields: move the focus off the select.
    await page.click('#lesson-huffman h2');
    await page.keyboard.press('Home');
    for (let b = 0; b < perBlock.length; b++) {
      await page.waitForSelector(`#lesson-huffman[data-block="${b}"]`);
      const shown = Number(await page.getAttribute('#encoder-block', 'data-encoder-bytes'));
      assert.equal(shown, perBlock[b], `group ${group} block ${b}`);
      assert.equal(Number(await page.getAttribute('#encoder-block', 'data-explained-bytes')), shown, 'explained = coded');
      const bits = async (id) => Number(await page.getAttribute(`tr[data-cost=${id}]`, 'data-bits'));
      assert.ok((await bits('entropy')) <= (await bits('unlimited')) + 1e-6, 'entropy ≤ unlimited Huffman');
      assert.ok((await bits('unlimited')) <= (await bits('limited')), 'unlimited ≤ limited');
      await page.keyboard.press('ArrowRight');
    }
    await page.keyboard.press('ArrowLeft');
    await page.waitForSelector(`#lesson-huffman[data-block="${perBlock.length - 2}"]`);
  }
  assert.match(await page.evaluate(() => location.hash), /^#learn\/huffman\?tensor=.*&group=0&block=\d+$/);
  // The native CLI's LMC (PLMC) size of the tensor alone: its one segment (≤ 1 MiB) holds the
  // blocks of both groups after the 24-byte header, the segment's 8-byte size and layout byte.
  const one = oneTensor(DEMO, TENSOR, path.join(app.tmp, 'one-tensor.safetensors'));
  assert.ok(one.bytes <= 1 << 20);
  const bench = JSON.parse(execFileSync(BITLENS, ['bench', one.file, '--codecs', 'lmc', '--json', '--repeat', '1', '--threads', '1']));
  assert.equal(bench.results[0].codec, 'lmc');
  assert.equal(allBlocks + 24 + 8 + 1, bench.results[0].compressed_bytes, 'Σ blocks of both groups vs bitlens bench');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('ans: stepping changes the state, decoding ends in the input symbols', { timeout: 120_000 }, async () => {
  const page = await openLesson(`#learn/ans?tensor=${TENSOR}&n=32&step=3`, '#ans-claim');
  for (const chart of ['ans-lanes', 'ans-freqs']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  assert.equal(await page.getAttribute('#lesson-ans', 'data-step'), '3');
  const state = () => page.getAttribute('#ans-step', 'data-state');
  const s3 = await state();
  await page.click('#ans-next');
  await page.waitForSelector('#lesson-ans[data-step="4"]');
  const s4 = await state();
  assert.notEqual(s4, s3, 'a step changes the state');
  await page.screenshot({ path: path.join(SHOTS, 'learn-ans.png'), fullPage: true });
  await page.keyboard.press('ArrowLeft');
  await page.waitForSelector('#lesson-ans[data-step="3"]');
  assert.equal(await state(), s3, 'stepping back restores it');
  const input = await page.getAttribute('#ans-input', 'data-symbols');
  assert.equal(input.split(',').length, 32);
  // Half way (all encoded), the decoder has nothing yet; at the end it has the input back.
  await page.keyboard.press('End');
  await page.waitForSelector('#lesson-ans[data-step="64"]');
  assert.equal(await page.getAttribute('#ans-step', 'data-phase'), 'decode');
  assert.equal(await page.getAttribute('#ans-decoded', 'data-decoded'), input);
  // The claim's measured figures: rANS within reach of the entropy of the exponents.
  const claim = page.locator('#ans-claim');
  const entropy = Number(await claim.getAttribute('data-entropy'));
  const rans = Number(await claim.getAttribute('data-rans'));
  assert.ok(entropy > 0 && entropy < 8 && rans >= entropy, `entropy ${entropy}, rANS ${rans}`);
  assert.match(await page.evaluate(() => location.hash), /^#learn\/ans\?tensor=.*&n=32&step=64$/);
  await page.screenshot({ path: path.join(SHOTS, 'learn-ans-decoded.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the header links to the lessons; print hides the app chrome', { timeout: 60_000 }, async () => {
  const page = await app.openApp();
  await page.click('#learn-link');
  await page.waitForSelector('#lesson-float');
  await page.click('a.lesson-link[href="#learn/ans"]');
  await page.waitForSelector('#lesson-ans #ans-claim', { timeout: 60_000 });
  await page.emulateMedia({ media: 'print' });
  await page.screenshot({ path: path.join(SHOTS, 'learn-ans-print.png'), fullPage: true });
  assert.equal(await page.locator('header.top').isVisible(), false);
  assert.equal(await page.locator('.learn-nav').isVisible(), false);
  assert.ok(await page.locator('[data-chart="ans-freqs"]').isVisible());
  await page.emulateMedia({ media: 'screen' });
  await page.click('.learn-tools a[href="#"]');
  await page.waitForSelector('.welcome, .panel');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a link to a tensor that is not open says so and shows the largest tensor', { timeout: 60_000 }, async () => {
  const page = await openLesson('#learn/ans?tensor=no.such.tensor&n=16', '#ans-claim');
  assert.match(await page.textContent('#learn-missing'), /no\.such\.tensor is not in the open checkpoint/);
  // The demo's largest tensors are the two 384 × 384 attention weights; the first is the key.
  assert.equal(await page.$eval('#lesson-tensor', (s) => s.value), TENSOR);
  assert.equal((await page.getAttribute('#ans-input', 'data-symbols')).split(',').length, 16);
  assert.deepEqual(page.errors, []);
  await page.close();
});
