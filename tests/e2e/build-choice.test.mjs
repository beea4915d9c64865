// The codec worker's rule (web/build-choice.js, `chooseBuild`) on its own, in node: which build,
// pool size and read-ahead thread it picks for each kind of page and core count, and the reason
// the page shows. The browser side (the page showing it, the pool started) is tests/e2e/threads.test.mjs.
//
//   node --test tests/e2e/build-choice.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseBuild, SHARED_CORES } from '../../web/build-choice.js';

/** The codec worker of an isolated page with the threaded build made, nothing forced. */
const env = (cores, more = {}) => ({ codec: true, isolated: true, built: true, cores, threads: null, readAhead: null, ...more });

test('two cores or fewer: the single-threaded build and no read-ahead thread, as on a page that is not isolated', () => {
  const plain = chooseBuild({ ...env(2), isolated: false });
  for (let cores = 1; cores <= SHARED_CORES; cores++) {
    const c = chooseBuild(env(cores));
    assert.deepEqual({ pool: c.pool, ahead: c.ahead }, { pool: plain.pool, ahead: plain.ahead });
    assert.match(c.reason, new RegExp(`^${cores} cores?: helper threads would share them with the codec`));
  }
});

test('more cores: the threaded build on a pool of cores − 1, with the read-ahead thread', () => {
  for (const cores of [3, 4, 8, 16]) {
    const c = chooseBuild(env(cores));
    assert.equal(c.pool, cores - 1);
    assert.equal(c.ahead, true);
    assert.match(c.reason, new RegExp(`^${cores} cores: a pool of ${cores - 1},`));
  }
});

test('no isolation, no threaded build, a statistics worker: single-threaded, and why', () => {
  assert.deepEqual(chooseBuild({ ...env(8), isolated: false }), {
    pool: 0,
    ahead: false,
    reason: 'the page is not cross-origin isolated (no SharedArrayBuffer)',
  });
  const unbuilt = chooseBuild({ ...env(8), built: false });
  assert.equal(unbuilt.pool, 0);
  assert.equal(unbuilt.ahead, true);
  assert.match(unbuilt.reason, /threaded build was not made/);
  assert.equal(chooseBuild({ ...env(8), codec: false }).pool, 0);
});

test("the page's forced choice wins on an isolated page, and says so", () => {
  const threads = chooseBuild(env(2, { threads: 2 }));
  assert.deepEqual(threads, { pool: 2, ahead: true, reason: "forced by the page's ?codec-threads=2" });
  const single = chooseBuild(env(8, { threads: 0, readAhead: 0 }));
  assert.deepEqual(single, { pool: 0, ahead: false, reason: "forced by the page's ?codec-threads=0&codec-read-ahead=0" });
  // Only the read-ahead forced: the pool is the rule's.
  assert.equal(chooseBuild(env(8, { readAhead: 0 })).pool, 7);
  // Never the threaded build where it was not made, nor on a page that is not isolated.
  assert.equal(chooseBuild({ ...env(2, { threads: 2 }), built: false }).pool, 0);
  assert.equal(chooseBuild({ ...env(2, { threads: 2 }), isolated: false }).pool, 0);
});
