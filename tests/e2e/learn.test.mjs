// End-to-end tests of the teaching lessons (issue 14) in headless Chromium: each deep link
// (#learn/float, #learn/huffman, #learn/ans…) loads the bundled demo by itself (or reads the
// checkpoints given by ?url=, by range requests) and renders its
// charts without page errors; a flipped bit shows the value the format's bits give (decoded here
// with DataView and a small fp16 decoder); the encoder bytes of every block add up to the group's
// LMC stream the lesson reports; stepping rANS changes the state and decoding ends in the input;
// the grouping lesson's bit ratios and entropies equal `bitlens inspect`, its LMC sizes
// `bitlens bench`, its deflate / zstd sizes the embed API's call on the same bytes; the delta
// lesson's flips equal `bitlens diff`, its BitSnap and XOR + LMC sizes what `bitlens compress
// --base` stores for the same (mixed) tensor, with the 93.75 % break-even drawn.
//
//   node --test tests/e2e/learn.test.mjs      (after scripts/build-web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useApp } from './harness.mjs';
import { ROOT, BITLENS, SHOTS, collectErrors, inspect, diff } from './fixtures.mjs';

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
  collectErrors(page);
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

/** Tensor `name` of a safetensors file: its header entry, its data range and bytes. */
function tensorOf(file, name) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const t = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))[name];
  const start = 8 + n + t.data_offsets[0];
  const end = 8 + n + t.data_offsets[1];
  return { ...t, buf, start, end, data: buf.subarray(start, end) };
}

/** `bitlens bench --codecs lmc` bytes of a file holding only tensor `name`, as `dtype`. */
function benchLmc(src, name, dtype) {
  const out = path.join(app.tmp, `bench-${dtype}.safetensors`);
  const t = tensorOf(src, name);
  const shape = dtype === 'U8' ? [t.data.length] : t.shape;
  const json = Buffer.from(JSON.stringify({ [name]: { dtype, shape, data_offsets: [0, t.data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(out, Buffer.concat([len, json, t.data]));
  const bench = JSON.parse(execFileSync(BITLENS, ['bench', out, '--codecs', 'lmc', '--json', '--repeat', '1', '--threads', '1']));
  return bench.results[0].compressed_bytes;
}

/** The embed API's teachLayoutSizes on bytes `start..end` of the demo file, in the page. */
async function wasmLayoutSizes(page, start, end, transform) {
  return page.evaluate(async ({ url, start, end, transform }) => {
    const m = await import(new URL('bitlens-wasm.js', url).href);
    await m.default({ module_or_path: new URL('bitlens-wasm_bg.wasm', url) });
    const bytes = new Uint8Array(await (await fetch(new URL('demo/minilm-demo-step0.safetensors', url))).arrayBuffer());
    return JSON.parse(m.teachLayoutSizes(bytes.subarray(start, end), 'BF16', transform));
  }, { url: app.url, start, end, transform });
}

/** Numbers of a bar chart's bars, left to right. */
function bars(page, chart) {
  return page.$$eval(`[data-chart="${chart}"] rect.bar`, (els) => els.map((e) => Number(e.dataset.value)));
}

function close(a, b, what, eps = 1e-9) {
  assert.ok(Math.abs(a - b) <= eps, `${what}: page ${a} vs ${b}`);
}

test('grouping: bit ratios, entropies and real sizes equal the CLI and the embed API', { timeout: 180_000 }, async () => {
  const page = await openLesson(`#learn/grouping?tensor=${TENSOR}&transform=none&group=1`, '#grouping-sizes[data-peers="done"]');
  for (const chart of ['grouping-bits', 'grouping-blocks', 'grouping-size-bars']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  assert.ok(await page.locator('[data-chart="grouping-entropy"] table').count());
  const ref = inspect(DEMO).files[0].tensors.find((t) => t.name === TENSOR);
  // The whole tensor (288 KiB, under the lesson's 1 MiB) is measured.
  assert.equal(Number(await page.getAttribute('#lesson-grouping', 'data-bytes')), ref.bytes);
  // Bit ratios, most significant bit first, equal bitlens inspect's.
  const ratios = await bars(page, 'grouping-bits');
  assert.deepEqual(ratios, [...ref.bit_set_ratio].reverse());
  // Order-0 entropies: interleaved = inspect's byte entropy, groups (no transform) = its group entropies.
  const bpb = async (stream) => Number(await page.getAttribute(`tr[data-stream="${stream}"]`, 'data-bits-per-byte'));
  close(await bpb('interleaved'), ref.byte_entropy, 'interleaved entropy');
  close(await bpb('group-0'), ref.byte_group_entropy[0], 'group 0 entropy');
  close(await bpb('group-1'), ref.byte_group_entropy[1], 'group 1 entropy');
  close(await bpb('grouped'), (ref.byte_group_entropy[0] + ref.byte_group_entropy[1]) / 2, 'grouped entropy');
  assert.ok((await bpb('grouped')) < (await bpb('interleaved')), 'grouping lowers the entropy');
  // Per-64 KiB-block entropies of the group drawn: 144 KiB of high bytes → 3 blocks.
  assert.equal((await bars(page, 'grouping-blocks')).length, 3);
  await page.screenshot({ path: path.join(SHOTS, 'learn-grouping.png'), fullPage: true });

  const t = tensorOf(DEMO, TENSOR);
  const sizes = async () => {
    const rows = await page.$$eval('#grouping-sizes tr[data-interleaved]', (els) => els.map((e) => ({
      codec: e.dataset.codec, interleaved: Number(e.dataset.interleaved), grouped: Number(e.dataset.grouped),
    })));
    return Object.fromEntries(rows.map((r) => [r.codec, r]));
  };
  const none = await sizes();
  assert.deepEqual(Object.keys(none), ['lmc', 'deflate', 'zstd']);
  // LMC on the interleaved bytes is LMC of the bytes as U8: bitlens bench of that file.
  assert.equal(none.lmc.interleaved, benchLmc(DEMO, TENSOR, 'U8'), 'LMC interleaved vs bitlens bench (U8)');
  const wasmNone = await wasmLayoutSizes(page, t.start, t.end, 'none');
  for (const row of wasmNone) assert.deepEqual(none[row.codec], row, `${row.codec} (no transform) vs teachLayoutSizes`);
  for (const c of ['lmc', 'deflate', 'zstd']) assert.ok(none[c].grouped < none[c].interleaved, `${c}: grouped smaller`);

  // Interaction: LMC's sign rotation changes the groups; the sizes follow, LMC's equal bench's.
  await page.selectOption('#grouping-transform', 'rotate');
  await page.waitForSelector('#lesson-grouping[data-transform="rotate"] #grouping-sizes[data-peers="done"]');
  const rot = await sizes();
  assert.notEqual(rot.lmc.grouped, none.lmc.grouped, 'the transform changes LMC grouped');
  assert.notEqual(await bpb('group-1'), ref.byte_group_entropy[1], 'the rotated high byte has another entropy');
  assert.equal(rot.lmc.grouped, benchLmc(DEMO, TENSOR, 'BF16'), 'LMC grouped vs bitlens bench');
  const wasmRot = await wasmLayoutSizes(page, t.start, t.end, 'rotate');
  for (const row of wasmRot) assert.deepEqual(rot[row.codec], row, `${row.codec} (rotate) vs teachLayoutSizes`);
  const claim = page.locator('#grouping-claim');
  assert.ok(Number(await claim.getAttribute('data-grouped-bits')) < Number(await claim.getAttribute('data-interleaved-bits')));
  // Keys step the group whose blocks are drawn; the link holds the state.
  await page.click('#lesson-grouping h2');
  await page.keyboard.press('ArrowLeft');
  await page.waitForSelector('#lesson-grouping[data-group="0"]');
  assert.match(await page.evaluate(() => location.hash), /^#learn\/grouping\?tensor=.*&transform=rotate&group=0$/);
  // Another tensor: its ratios are inspect's for it.
  const other = 'encoder.layer.0.attention.self.query.weight';
  await page.selectOption('#lesson-tensor', other);
  await page.waitForFunction((o) => location.hash.includes(encodeURIComponent(o)) || location.hash.includes(o), other);
  await page.waitForSelector('#grouping-sizes[data-peers="done"]');
  const refOther = inspect(DEMO).files[0].tensors.find((x) => x.name === other);
  await page.waitForFunction((want) => {
    const b = [...document.querySelectorAll('[data-chart="grouping-bits"] rect.bar')].map((e) => Number(e.dataset.value));
    return b.length === want.length && b.every((v, i) => v === want[i]);
  }, [...refOther.bit_set_ratio].reverse());
  close(await bpb('interleaved'), refOther.byte_entropy, `${other} interleaved entropy`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

/** Tensor `name` of `base` with element i of `next` where ⌊(i+1)·p/100⌋ > ⌊i·p/100⌋ (the lesson's mix). */
function mixedFile(base, next, name, percent, out) {
  const b = tensorOf(base, name);
  const n = tensorOf(next, name);
  const buf = Buffer.from(b.buf);
  for (let i = 0; i < b.data.length / 2; i++) {
    if (Math.floor(((i + 1) * percent) / 100) > Math.floor((i * percent) / 100)) {
      buf[b.start + 2 * i] = n.data[2 * i];
      buf[b.start + 2 * i + 1] = n.data[2 * i + 1];
    }
  }
  fs.writeFileSync(out, buf);
  return out;
}

/** Bytes `bitlens compress FILE --base BASE --codec CODEC` stores for tensor `name`. */
function storedDelta(file, base, codec, name) {
  const out = path.join(app.tmp, `delta-${codec}.bls`);
  execFileSync(BITLENS, ['compress', file, '--base', base, '--codec', codec, '-o', out], { stdio: 'ignore' });
  const snap = JSON.parse(execFileSync(BITLENS, ['inspect', '--json', out], { maxBuffer: 1 << 26 }));
  return snap.snapshots[0].tensors.find((t) => t.name === name).stored_bytes;
}

test('delta: flips equal bitlens diff, sizes equal bitlens compress --base, break-even drawn', { timeout: 180_000 }, async () => {
  const page = await openLesson(`#learn/delta?tensor=${TENSOR}&p=50`, '#delta-point');
  for (const chart of ['delta-flips', 'delta-curve']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  // The 93.75 % break-even: in the claim, and drawn as a line on the curve at x = 93.75.
  assert.equal(Number(await page.getAttribute('#delta-claim', 'data-break-even')), 0.9375);
  assert.equal(await page.locator('[data-chart="delta-curve"] g.series[data-series="bitmask break-even (93.75 %)"]').count(), 1);
  assert.equal(await page.locator('#delta-points tbody tr').count(), 11);
  // The pair the lesson reads (the demo's consecutive steps) and bitlens diff of it.
  const files = {};
  for (const which of ['base', 'new']) {
    const name = await page.getAttribute('#lesson-delta', `data-${which}`);
    const step = name.match(/step(\d)/)[1];
    files[which] = path.join(ROOT, `web/demo/minilm-demo-step${step}.safetensors`);
  }
  assert.notEqual(files.base, files.new);
  const ref = diff(files.base, files.new).tensors.find((t) => t.name === TENSOR);
  close(Number(await page.getAttribute('#delta-claim', 'data-changed-fraction')), ref.changed_fraction, 'changed fraction');
  assert.deepEqual(await bars(page, 'delta-flips'), [...ref.bit_flip_ratio].reverse());
  const point = async () => {
    const el = page.locator('#delta-point');
    const get = async (k) => Number(await el.getAttribute(`data-${k}`));
    return { percent: await get('percent'), changed: await get('changed'), bitsnap: await get('bitsnap'), xor: await get('xor-lmc'), bitmask: await get('bitmask') };
  };
  const half = await point();
  assert.equal(half.percent, 50);
  // The mixed tensor of 50 %, built here, through bitlens compress --base.
  const mixed = mixedFile(files.base, files.new, TENSOR, 50, path.join(app.tmp, 'mixed50.safetensors'));
  assert.equal(half.bitsnap, storedDelta(mixed, files.base, 'bitsnap', TENSOR), 'BitSnap at 50 % vs bitlens compress');
  assert.equal(half.xor, storedDelta(mixed, files.base, 'lmc', TENSOR), 'XOR + LMC at 50 % vs bitlens compress');
  const mixedDiff = diff(files.base, mixed).tensors.find((t) => t.name === TENSOR);
  assert.equal(half.changed, mixedDiff.changed_lanes, 'changed elements at 50 %');
  await page.screenshot({ path: path.join(SHOTS, 'learn-delta.png'), fullPage: true });
  // Interaction: → steps the share; End goes to the real pair, whose sizes are the CLI's.
  await page.click('#lesson-delta h2');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#delta-point[data-percent="60"]');
  const sixty = await point();
  assert.ok(sixty.changed > half.changed && sixty.bitmask > half.bitmask, 'more changed, bigger bitmask');
  await page.keyboard.press('End');
  await page.waitForSelector('#delta-point[data-percent="100"]');
  const full = await point();
  assert.equal(full.changed, ref.changed_lanes);
  assert.equal(full.bitsnap, storedDelta(files.new, files.base, 'bitsnap', TENSOR), 'BitSnap of the pair vs bitlens compress');
  assert.equal(full.xor, storedDelta(files.new, files.base, 'lmc', TENSOR), 'XOR + LMC of the pair vs bitlens compress');
  // The bitmask (raw values): mask + count + values, all under the break-even.
  assert.equal(full.bitmask, 17 + ref.lanes / 8 + 8 + 2 * ref.changed_lanes);
  assert.match(await page.evaluate(() => location.hash), /^#learn\/delta\?tensor=.*&p=100$/);
  await page.selectOption('#delta-percent', '20');
  await page.waitForSelector('#delta-point[data-percent="20"]');
  await page.emulateMedia({ media: 'print' });
  await page.screenshot({ path: path.join(SHOTS, 'learn-delta-print.png'), fullPage: true });
  await page.emulateMedia({ media: 'screen' });
  assert.deepEqual(page.errors, []);
  await page.close();
});

// ---- lossy (NeuZip §2.3, BitSnap §3.4) ----

/** The values of the BF16 or F32 tensor of the lessons in a safetensors file, as numbers. */
function tensorValues(file) {
  const { dtype, data } = tensorOf(file, TENSOR);
  if (dtype === 'F32') return Float32Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(4 * i));
  return Float32Array.from({ length: data.length / 2 }, (_, i) => f32(data.readUInt16LE(2 * i) << 16));
}

/** A safetensors file of one F32 tensor `name` holding `values`. */
function f32Tensor(name, shape, values, out) {
  const data = Buffer.from(Float32Array.from(values).buffer);
  const json = Buffer.from(JSON.stringify({ [name]: { dtype: 'F32', shape, data_offsets: [0, data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(out, Buffer.concat([len, json, data]));
  return out;
}

/** Largest absolute and relative error and MSE of `back` against `orig` (finite values). */
function errorsOf(orig, back) {
  let [maxAbs, maxRel, sq, n] = [0, 0, 0, 0];
  for (let i = 0; i < orig.length; i++) {
    const x = orig[i];
    if (!Number.isFinite(x)) continue;
    const e = Math.abs(back[i] - x);
    n++;
    sq += e * e;
    maxAbs = Math.max(maxAbs, e);
    if (x !== 0) maxRel = Math.max(maxRel, e / Math.abs(x));
  }
  return { maxAbs, maxRel, mse: sq / n };
}

/** The native CLI's codec run on `file`: the tensor's stored bytes and error report (from the
 * snapshot's index) and the values `bitlens decompress` restores. */
function cliRoundTrip(file, args, tag) {
  const snap = path.join(app.tmp, `lossy-${tag}.bls`);
  const back = path.join(app.tmp, `lossy-${tag}.safetensors`);
  execFileSync(BITLENS, ['compress', file, '-o', snap, ...args], { stdio: 'ignore' });
  execFileSync(BITLENS, ['decompress', snap, '-o', back], { stdio: 'ignore' });
  const [t] = JSON.parse(execFileSync(BITLENS, ['inspect', '--json', snap])).snapshots[0].tensors;
  return { stored: t.stored_bytes, error: t.error, values: tensorValues(back) };
}

function closeRel(a, b, what) {
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)), `${what}: page ${a} vs ${b}`);
}

test('lossy: measured errors stay within the shown bounds and equal the CLI codecs', { timeout: 300_000 }, async () => {
  const page = await openLesson(`#learn/lossy?tensor=${TENSOR}&k=3&block=512&clusters=16`, '#neuzip-figures');
  for (const chart of ['neuzip-histogram', 'bitsnap-histogram', 'naive-histogram', 'lossy-curve']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  // Every offered setting is a point: NeuZip 3 k × 5 blocks, BitSnap 5 K, naive uint8 (measured
  // one a browser task after the chosen ones).
  await page.waitForSelector('#lesson-lossy[data-measured="21"]');
  assert.equal(await page.locator('#curve-progress').count(), 0);
  assert.equal(await page.locator('[data-chart="lossy-curve"] circle.point').count(), 21);
  assert.match(await page.textContent('#lossy-scope'), /all 147456 values/);
  const one = oneTensor(DEMO, TENSOR, path.join(app.tmp, 'lossy-one.safetensors'));
  const orig = tensorValues(one.file);
  assert.equal(orig.length, 147456);
  assert.equal(Number(await page.getAttribute('#lesson-lossy', 'data-values')), orig.length);
  await page.screenshot({ path: path.join(SHOTS, 'learn-lossy.png'), fullPage: true });

  // NeuZip: each setting's shown maximum is within the shown bound 2^-k, and bound, maximum, MSE
  // and size equal the native codec's (its snapshot's stored bytes and error report) and the
  // errors of the values `bitlens decompress` gives back, computed here.
  const seen = new Set();
  for (const [k, block] of [[3, 512], [1, 64], [0, 32], [3, 32]]) {
    await page.selectOption('#neuzip-k', String(k));
    await page.selectOption('#neuzip-block', String(block));
    await page.waitForSelector(`#lesson-lossy[data-k="${k}"][data-block="${block}"]`);
    const fig = page.locator('#neuzip-figures');
    const num = async (a) => Number(await fig.getAttribute(a));
    const [max, bound, tight, bytes, mse] = [await num('data-measured-max'), await num('data-bound'),
      await num('data-tight-bound'), await num('data-bytes'), await num('data-mse')];
    assert.equal(bound, 2 ** -k, `k ${k}: the paper's bound`);
    assert.ok(max > 0 && max <= tight && tight <= bound, `k ${k} B ${block}: ${max} ≤ ${tight} ≤ ${bound}`);
    const cli = cliRoundTrip(one.file, ['--codec', 'neuzip', '--mantissa-bits', String(k), '--norm-block', String(block)], `nz${k}-${block}`);
    assert.equal(bytes, cli.stored, `k ${k} B ${block}: size`);
    assert.equal(max, cli.error.max_rel, `k ${k} B ${block}: max vs the snapshot's report`);
    closeRel(mse, cli.error.mse, `k ${k} B ${block}: MSE`);
    const mine = errorsOf(orig, cli.values);
    assert.equal(max, mine.maxRel, `k ${k} B ${block}: max vs the decompressed values`);
    closeRel(mse, mine.mse, `k ${k} B ${block}: MSE vs the decompressed values`);
    assert.equal(Number(await page.getAttribute('#neuzip-claim', 'data-measured-max')), max);
    seen.add(`${max}/${bytes}`);
  }
  assert.equal(seen.size, 4, 'each setting shows its own numbers');
  // ← / → step the block size (outside the selects).
  await page.click('#lesson-lossy h2');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#lesson-lossy[data-block="64"]');
  await page.keyboard.press('End');
  await page.waitForSelector('#lesson-lossy[data-block="512"]');
  assert.equal(await page.$eval('#neuzip-block', (s) => s.value), '512', 'the select follows the keys');

  // BitSnap on the values widened to fp32, against the native bitsnap-quant codec; naive uint8
  // against its definition computed here (one min / max, round to the nearest of 256 codes).
  const wide = f32Tensor(TENSOR, [384, 384], orig, path.join(app.tmp, 'lossy-f32.safetensors'));
  let [lo, hi] = [Infinity, -Infinity];
  for (const x of orig) [lo, hi] = [Math.min(lo, x), Math.max(hi, x)];
  const naive = orig.map((x) => Math.fround(lo + Math.round(((x - lo) / (hi - lo)) * 255) * ((hi - lo) / 255)));
  const naiveErr = errorsOf(orig, naive);
  const mses = new Set();
  for (const K of [16, 4, 1]) {
    await page.selectOption('#bitsnap-clusters', String(K));
    await page.waitForSelector(`#lesson-lossy[data-clusters="${K}"]`);
    const row = (q) => page.locator(`tr[data-quant="${q}"]`);
    const num = async (q, a) => Number(await row(q).getAttribute(a));
    const [max, bound, bytes, mse] = [await num('bitsnap', 'data-measured-max'), await num('bitsnap', 'data-bound'),
      await num('bitsnap', 'data-bytes'), await num('bitsnap', 'data-mse')];
    assert.ok(max > 0 && max <= bound, `K ${K}: ${max} ≤ ${bound}`);
    const cli = cliRoundTrip(wide, ['--codec', 'bitsnap-quant', '--clusters', String(K)], `bs${K}`);
    assert.equal(bytes, cli.stored, `K ${K}: size`);
    assert.equal(max, cli.error.max_abs, `K ${K}: max vs the snapshot's report`);
    closeRel(mse, cli.error.mse, `K ${K}: MSE`);
    assert.equal(max, errorsOf(orig, cli.values).maxAbs, `K ${K}: max vs the decompressed values`);
    mses.add(mse);
    // Naive uint8: the same whatever K; within its bound; one byte a value plus min and max.
    const [nMax, nBound, nBytes, nMse] = [await num('naive', 'data-measured-max'), await num('naive', 'data-bound'),
      await num('naive', 'data-bytes'), await num('naive', 'data-mse')];
    assert.ok(nMax <= nBound, `naive: ${nMax} ≤ ${nBound}`);
    assert.equal(nMax, naiveErr.maxAbs, 'naive max');
    closeRel(nMse, naiveErr.mse, 'naive MSE');
    assert.equal(nBytes, orig.length + 8);
    if (K === 16) {
      // The paper's claim, measured: 12 bits a value (≈ 2.67× fp32) and a lower MSE than naive.
      const ratio = Number(await page.getAttribute('#bitsnap-claim', 'data-ratio'));
      assert.ok(ratio > 2.6 && ratio < 2.67, `ratio ${ratio}`);
      assert.ok(mse < nMse, `BitSnap MSE ${mse} < naive ${nMse}`);
    }
    if (K === 1) assert.equal(mse, nMse, 'one cluster is naive uint8');
  }
  assert.equal(mses.size, 3, 'each K shows its own MSE');

  // The curve's other error: RMS; the chosen settings are drawn larger; the link holds it all.
  const errs = () => page.$$eval('[data-chart="lossy-curve"] circle.point', (els) => els.map((e) => Number(e.dataset.error)));
  const before = await errs();
  await page.selectOption('#curve-metric', 'rms');
  await page.waitForSelector('#lesson-lossy[data-metric="rms"]');
  const after = await errs();
  assert.notDeepEqual(after, before);
  assert.ok(Math.abs(after[after.length - 1] - Math.sqrt(naiveErr.mse)) <= 1e-9 * after[after.length - 1], 'naive RMS point');
  assert.equal(await page.locator('[data-chart="lossy-curve"] circle.point.current').count(), 3);
  assert.match(await page.evaluate(() => location.hash), /^#learn\/lossy\?tensor=.*&k=3&block=512&clusters=1&metric=rms&bins=16&beta=0.5$/);
  await page.screenshot({ path: path.join(SHOTS, 'learn-lossy-curve.png'), fullPage: true });
  await page.emulateMedia({ media: 'print' });
  await page.screenshot({ path: path.join(SHOTS, 'learn-lossy-print.png'), fullPage: true });
  assert.ok(await page.locator('[data-chart="lossy-curve"]').isVisible());
  await page.emulateMedia({ media: 'screen' });
  assert.deepEqual(page.errors, []);
  await page.close();
});

/** The lossy lesson's Inshrinkerator figures computed natively (crates/lessons/examples/bins_lesson.rs). */
function nativeBins(file, name, values, beta) {
  const out = execFileSync('cargo', ['run', '-q', '--release', '-p', 'bitlens-lessons', '--features', 'bins', '--example', 'bins_lesson', '--',
    file, name, String(values), String(beta)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  return JSON.parse(out);
}

/** Equal up to the last bits: the worker's wasm and the native build may round a logarithm differently. */
function closeTo(a, b, what) {
  assert.ok(Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), Math.abs(b)), `${what}: page ${a} vs native ${b}`);
}

test('lossy: Inshrinkerator bins equal the crate, beat uniform bins, follow the bin count and β', { timeout: 300_000 }, async () => {
  const page = await openLesson(`#learn/lossy?tensor=${TENSOR}&bins=8&beta=0.5`, '#lossy-inshrink[data-ready="true"]');
  for (const chart of ['inshrink-placement', 'inshrink-curve-l2', 'inshrink-curve-max']) {
    assert.ok(await page.locator(`[data-chart="${chart}"] svg`).count(), `${chart} drawn`);
  }
  const values = Number(await page.getAttribute('#lossy-inshrink', 'data-values'));
  assert.equal(values, 147456, 'all the values of the tensor');
  await page.screenshot({ path: path.join(SHOTS, 'learn-lossy-inshrink.png'), fullPage: true });

  /** The page's figures at its current bin count, checked against the native ones. */
  async function check(native, bins) {
    await page.waitForSelector(`#lossy-inshrink[data-ready="true"][data-bins="${bins}"]`);
    const row = native.rows.find((r) => r.bins === bins);
    const fewest = native.fewest.find((f) => f.bins === bins);
    for (const q of ['nonuniform', 'uniform']) {
      const tr = page.locator(`#inshrink-figures tr[data-quantizer="${q}"]`);
      closeTo(Number(await tr.getAttribute('data-rel-l2')), row[q].rel_l2, `${bins} bins ${q} relative L2`);
      closeTo(Number(await tr.getAttribute('data-max-abs')), row[q].max_abs, `${bins} bins ${q} max`);
      const marks = await page.$$eval(`[data-chart="inshrink-placement"] line.centroid.${q === 'nonuniform' ? 'non-uniform' : 'uniform'}`,
        (els) => els.map((e) => Number(e.dataset.value)));
      assert.equal(marks.length, row[q].centroids.length, `${bins} bins ${q}: centroids drawn`);
      marks.forEach((m, i) => closeTo(m, row[q].centroids[i], `${bins} bins ${q} centroid ${i}`));
    }
    const claim = page.locator('#inshrink-claim');
    closeTo(Number(await claim.getAttribute('data-error')), fewest.error, `${bins} bins: target error`);
    assert.equal(Number(await claim.getAttribute('data-nonuniform')), fewest.nonuniform, `${bins} bins: non-uniform bins`);
    assert.equal(await claim.getAttribute('data-uniform'), fewest.uniform === null ? '' : String(fewest.uniform), `${bins} bins: uniform bins`);
    // Non-uniform bins are never worse than uniform ones at the same count (relative L2), on the curve.
    const curve = await page.$$eval('[data-chart="inshrink-curve-l2"] circle.point',
      (els) => els.map((e) => [e.dataset.quantizer, Number(e.dataset.bins), Number(e.dataset.error)]));
    assert.equal(curve.length, 2 * 29, 'both quantizers at 4..32 bins');
    for (const [q, b, e] of curve) {
      const other = curve.find(([q2, b2]) => q2 !== q && b2 === b)[2];
      if (q === 'non-uniform') assert.ok(e <= other, `${b} bins: non-uniform ${e} ≤ uniform ${other}`);
    }
    return Number(await page.locator('#inshrink-figures tr[data-quantizer="nonuniform"]').getAttribute('data-rel-l2'));
  }

  const native = nativeBins(DEMO, TENSOR, values, 0.5);
  assert.equal(native.values, values);
  const at8 = await check(native, 8);
  // The bin count steps with the keyboard (the range input), and the numbers follow.
  await page.focus('#inshrink-bins');
  await page.keyboard.press('ArrowRight');
  const at9 = await check(native, 9);
  assert.ok(at9 < at8, `9 bins ${at9} < 8 bins ${at8}`);
  await page.keyboard.press('End');
  await check(native, 32);
  await page.keyboard.press('Home');
  await check(native, 4);
  assert.match(await page.evaluate(() => location.hash), /&bins=4&beta=0\.5$/);

  // Another β asks the worker again; its figures equal the crate's with that β.
  await page.selectOption('#inshrink-beta', '1');
  await page.waitForSelector('#lossy-inshrink[data-beta="1"][data-ready="true"]');
  await check(nativeBins(DEMO, TENSOR, values, 1), 4);
  assert.match(await page.evaluate(() => location.hash), /&bins=4&beta=1$/);
  await page.screenshot({ path: path.join(SHOTS, 'learn-lossy-inshrink-beta1.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lessons on checkpoints opened by URL: the tensor read by a range request, numbers equal the CLI', { timeout: 180_000 }, async () => {
  const { startRangeServer } = await import('./range-server.mjs');
  const server = await startRangeServer(path.join(ROOT, 'web/demo'));
  try {
    const [a, b] = ['minilm-demo-step0.safetensors', 'minilm-demo-step1.safetensors'].map((f) => server.url + f);
    const page = await openLesson(`?url=${encodeURIComponent(a)}#learn/grouping?tensor=${TENSOR}&transform=none&group=1`, '#grouping-sizes[data-peers="done"]');
    const ref = inspect(DEMO).files[0].tensors.find((t) => t.name === TENSOR);
    assert.deepEqual(await bars(page, 'grouping-bits'), [...ref.bit_set_ratio].reverse());
    assert.equal(Number(await page.getAttribute('#lesson-grouping', 'data-bytes')), ref.bytes);
    // Only the URL's file was read (the demo was not loaded), the lesson's tensor by its own range.
    // (Besides the file, the page looks for its sidecar next to it: none here.)
    const paths = new Set(server.requests.map((r) => r.path).filter((p) => !p.endsWith('.bitlens.json')));
    assert.deepEqual([...paths], ['/minilm-demo-step0.safetensors']);
    const buf = fs.readFileSync(DEMO);
    const n = Number(buf.readBigUInt64LE(0));
    const [s0, s1] = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))[TENSOR].data_offsets;
    const want = `bytes=${8 + n + s0}-${8 + n + s1 - 1}`;
    assert.ok(server.requests.some((r) => r.range === want), `no request ${want}: ${JSON.stringify(server.requests.map((r) => r.range))}`);
    assert.deepEqual(page.errors, []);
    await page.close();

    // The delta lesson pairs two URLs as Compare does; its flips equal bitlens diff.
    const delta = await openLesson(`?url=${encodeURIComponent(a)}&url=${encodeURIComponent(b)}#learn/delta?tensor=${TENSOR}&p=50`, '#delta-point');
    const d = diff(DEMO, path.join(ROOT, 'web/demo/minilm-demo-step1.safetensors')).tensors.find((t) => t.name === TENSOR);
    close(Number(await delta.getAttribute('#delta-claim', 'data-changed-fraction')), d.changed_fraction, 'changed fraction');
    assert.equal(await delta.getAttribute('#lesson-delta', 'data-base'), 'minilm-demo-step0.safetensors');
    assert.deepEqual(delta.errors, []);
    await delta.close();
  } finally {
    server.close();
  }
});
