// End-to-end test of Inshrinkerator (paper 002) in the page, in headless Chromium: the demo
// checkpoint compressed with the "Inshrinkerator (lossy, error budget)" preset under a budget set in
// the page; the downloaded snapshot read by `bitlens inspect --json` (the same plan and per-tensor
// errors the page shows, the same plan the CLI's own search picks), restored by `bitlens decompress`
// and by the page byte for byte alike, every restored float tensor's relative L2 error (computed
// here from the original and restored files) within the budget, the others bit-exact; the snapshot
// opened in the page shows the same plan.
//
//   node --test tests/e2e/inshrink.test.mjs   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { ROOT, SHOTS } from './fixtures.mjs';
import { cli, sameBytes, download, clickCompress, decompressFirst } from './steps.mjs';

const DEMO = path.join(ROOT, 'web/demo/minilm-demo-step2.safetensors');
const BUDGET = 0.08;

const app = useApp();

/** A safetensors file's tensors: name → { dtype, bytes }. */
function tensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    out.set(name, { dtype: t.dtype, bytes: buf.subarray(8 + n + a, 8 + n + b) });
  }
  return out;
}

/** The values of a BF16 / F16 / F32 tensor as numbers. */
function floats({ dtype, bytes }) {
  const v = new Float64Array(bytes.length / { BF16: 2, F16: 2, F32: 4 }[dtype]);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < v.length; i++) {
    if (dtype === 'F32') v[i] = bytes.readFloatLE(4 * i);
    else if (dtype === 'BF16') {
      u[0] = bytes.readUInt16LE(2 * i) << 16;
      v[i] = f[0];
    } else throw new Error(`dtype ${dtype} not used by the demo`);
  }
  return v;
}

/** ‖w − ŵ‖ / ‖w‖ (0 for an all-zero w equal to ŵ). */
function relativeL2(w, r) {
  let num = 0;
  let den = 0;
  for (let i = 0; i < w.length; i++) {
    num += (w[i] - r[i]) ** 2;
    den += w[i] ** 2;
  }
  return den === 0 ? Math.sqrt(num) : Math.sqrt(num / den);
}

/** The plan an `.inshrink-plan` element shows: groups and tensors (in the page's order). */
async function shownPlan(page, root) {
  return page.$eval(root, (el) => ({
    ...el.dataset,
    groups: [...el.querySelectorAll('.inshrink-groups tbody tr')].map((tr) => ({ ...tr.dataset })),
    tensors: [...el.querySelectorAll('.inshrink-tensors tbody tr')].map((tr) => ({ ...tr.dataset })),
    own: [...el.querySelectorAll('.inshrink-own tbody tr')].map((tr) => ({ ...tr.dataset })),
  }));
}

/** Asserts that a plan shown in the page is the one `bitlens inspect --json` reads from the snapshot. */
function samePlan(shown, snapshot) {
  const ins = snapshot.inshrink;
  assert.ok(ins, 'inspect reports the inshrink plan');
  assert.equal(shown.quality, ins.quality.kind);
  assert.equal(Number(shown.maxError), ins.quality.max_error);
  assert.equal(shown.groups.length, ins.groups.length);
  for (const g of ins.groups) {
    const row = shown.groups.find((r) => r.group === g.group);
    assert.ok(row, `group ${g.group}`);
    assert.equal(row.exact, String(g.setting.exact), `${g.group} exact`);
    if (!g.setting.exact) {
      assert.equal(Number(row.bins), g.setting.bins, `${g.group} bins`);
      // f32 fields: the page prints them as f32, the CLI's JSON widened to f64.
      assert.equal(Math.fround(Number(row.prune)), Math.fround(g.setting.prune), `${g.group} prune`);
      assert.equal(Math.fround(Number(row.protect)), Math.fround(g.setting.protect), `${g.group} protect`);
      assert.equal(row.metric, g.setting.metric, `${g.group} metric`);
    }
    assert.equal(row.fallback, String(Boolean(g.search?.exact_fallback)), `${g.group} fallback`);
    assert.ok(Math.abs(Number(row.maxError) - g.max_error) <= 1e-12, `${g.group} max error ${row.maxError} vs ${g.max_error}`);
  }
  // The tensors the budget moved off their group's setting (more bins, or lossless), as stored.
  const own = ins.report?.own_settings ?? [];
  assert.deepEqual(shown.own.map((o) => [o.name, o.exact]), own.map((o) => [o.name, String(o.setting.exact)]));
  const cliTensors = snapshot.tensors.filter((t) => t.inshrink);
  assert.equal(shown.tensors.length, cliTensors.length, 'one row per inshrink tensor');
  for (const t of cliTensors) {
    const row = shown.tensors.find((r) => r.name === t.name);
    assert.ok(row, t.name);
    assert.ok(Math.abs(Number(row.error) - t.inshrink.error) <= 1e-7 * Math.max(1, t.inshrink.error), `${t.name} error ${row.error} vs ${t.inshrink.error}`);
    assert.equal(Number(row.protected), t.inshrink.protected, `${t.name} protected`);
    assert.equal(row.group, t.inshrink.group, `${t.name} group`);
  }
  // Largest error first.
  const errs = shown.tensors.map((r) => Number(r.error));
  assert.deepEqual(errs, [...errs].sort((a, b) => b - a));
}

test('Inshrinkerator in the page: the CLI reads the plan, restores the same bytes, every error within the budget', { timeout: 600_000 }, async () => {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', DEMO);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click('[data-tab=codecs]');
  await page.selectOption('#codec-select', 'inshrink');
  // The budget control, named as the model-free proxy; no base (chains are the CLI's).
  const label = await page.$eval('#max-error', (e) => e.closest('label').textContent);
  assert.match(label, /relative L2/);
  assert.match(label, /model-free proxy/);
  assert.equal(await page.$('#base-select'), null);
  // The input shows the page's state: a re-render (the statistics worker still reporting) between
  // typing and the change event puts the old budget back, so type until the state holds it.
  for (let tries = 0; ; tries++) {
    await page.fill('#max-error', String(BUDGET));
    await page.press('#max-error', 'Tab');
    await page.waitForTimeout(200);
    if (Number(await page.inputValue('#max-error')) === BUDGET) break;
    assert.ok(tries < 10, 'the budget typed into the page did not hold');
  }
  const r = await clickCompress(page, 600_000);
  assert.equal(r.preset, 'inshrink');
  assert.equal(r.lossy, 'true');
  assert.equal(Number(r.in), fs.statSync(DEMO).size);
  const shown = await shownPlan(page, '#compress-result .inshrink-plan');
  assert.equal(Number(shown.maxError), BUDGET, 'the budget set in the page was used');
  await page.screenshot({ path: path.join(SHOTS, 'codecs-compress-inshrink.png'), fullPage: true });
  const { out, suggested } = await download(page, '#compress-download', path.join(app.tmp, 'page-inshrink.bls'));
  assert.equal(suggested, 'minilm-demo-step2.bls');
  assert.equal(fs.statSync(out).size, Number(r.out));

  // `bitlens inspect --json` reads the plan and errors the page shows.
  const snapshot = JSON.parse(cli('inspect', out, '--json')).snapshots[0];
  samePlan(shown, snapshot);
  // The CLI's own search of the same file under the same budget picks the same plan.
  const native = path.join(app.tmp, 'cli-inshrink.bls');
  cli('compress', DEMO, '--codec', 'inshrink', '--max-error', String(BUDGET), '-o', native);
  const nativePlan = JSON.parse(cli('inspect', native, '--json')).snapshots[0].inshrink;
  assert.deepEqual(snapshot.inshrink.groups.map((g) => g.setting), nativePlan.groups.map((g) => g.setting));
  assert.deepEqual(snapshot.inshrink.groups.map((g) => g.max_error), nativePlan.groups.map((g) => g.max_error));

  // The CLI restores it; every float tensor is within the budget, the others bit-exact.
  const restoredCli = path.join(app.tmp, 'cli-restored.safetensors');
  cli('decompress', out, '-o', restoredCli);
  const orig = tensors(DEMO);
  const back = tensors(restoredCli);
  assert.deepEqual([...back.keys()], [...orig.keys()]);
  let checked = 0;
  for (const [name, t] of orig) {
    const b = back.get(name);
    assert.equal(b.dtype, t.dtype, name);
    if (!['F32', 'F16', 'BF16'].includes(t.dtype)) {
      assert.ok(b.bytes.equals(t.bytes), `${name} (${t.dtype}) bit-exact`);
      continue;
    }
    const e = relativeL2(floats(t), floats(b));
    assert.ok(e <= BUDGET, `${name}: relative L2 ${e} > budget ${BUDGET}`);
    const row = shown.tensors.find((x) => x.name === name);
    if (!row) {
      // Stored lossless (LMC): its lossy code was not smaller; listed with why (issue 29).
      assert.ok(shown.own.some((o) => o.name === name && o.exact === 'true'), `${name} listed`);
      assert.equal(e, 0, `${name} lossless`);
      checked += 1;
      continue;
    }
    assert.ok(Math.abs(e - Number(row.error)) <= 1e-5 + 1e-3 * e, `${name}: measured ${e}, page says ${row.error}`);
    checked += 1;
  }
  assert.ok(checked >= 8, `${checked} float tensors checked`);
  assert.ok(shown.tensors.some((x) => Number(x.error) > 0), 'some tensor is lossy');
  assert.deepEqual(page.errors, []);
  await page.close();

  // The page opens its own snapshot: the same plan, and its restore equals the CLI's byte for byte.
  const page2 = await app.openApp();
  await page2.setInputFiles('#file-input', out);
  await page2.waitForSelector('.snapshot .inshrink-plan', { timeout: 120_000 });
  const reopened = await shownPlan(page2, '.snapshot .inshrink-plan');
  samePlan(reopened, snapshot);
  assert.deepEqual(reopened.tensors, shown.tensors);
  await page2.screenshot({ path: path.join(SHOTS, 'codecs-open-inshrink.png'), fullPage: true });
  const restoredPage = path.join(app.tmp, 'page-restored.safetensors');
  const restored = await decompressFirst(page2, restoredPage);
  assert.equal(restored.suggested, 'page-inshrink.safetensors');
  sameBytes(restoredPage, restoredCli, 'page restore vs bitlens decompress');
  assert.deepEqual(page2.errors, []);
  await page2.close();
});
