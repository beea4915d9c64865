// @ts-check
// The codec worker's choice of build, rayon pool size and read-ahead thread (issue 28: threads must
// never cost): one function, `chooseBuild`, imported by web/worker.js and tested on its own
// (tests/e2e/build-choice.test.mjs). The page shows its reason (`#codec-build`).
//
// Measured on a 2-core machine (BENCHMARKS.md, "Threads in the page (issue 28)"): there the
// threaded build with a pool of 2 (or 1) and the read-ahead thread cost 15–40 % more CPU per byte
// than the single-threaded build reading in its own thread, and decompressing MiniLM (45 MB) was
// slower with them in every run; the pool, the read-ahead thread, the browser's I/O thread and the
// page share two cores, so every helper thread takes time from the codec. So with at most
// `SHARED_CORES` cores an isolated page runs exactly what a page that is not isolated runs: the
// single-threaded build, no read-ahead thread — isolation then cannot make it slower. With more
// cores the threaded build runs on a pool of cores − 1 (one core left for the read-ahead thread,
// the browser's I/O and the page), with the read-ahead thread.

/** At most this many cores: no helper threads (the measured 2-core case). */
export const SHARED_CORES = 2;

/**
 * @typedef {object} Env what the codec worker's choice depends on
 * @property {boolean} codec the codec worker (else a statistics worker)
 * @property {boolean} isolated the page is cross-origin isolated (SharedArrayBuffer)
 * @property {boolean} built scripts/build-web.sh made the threaded build
 * @property {number} cores navigator.hardwareConcurrency
 * @property {number | null} threads forced pool size, 0: the single-threaded build (the page's
 *   `?codec-threads=N`; tests and benchmarks only)
 * @property {number | null} readAhead forced read-ahead thread, 0 off, else on (the page's
 *   `?codec-read-ahead=B`; tests and benchmarks only; on when only the pool is forced)
 */

/**
 * @typedef {object} Choice
 * @property {number} pool the rayon pool's size; 0: the single-threaded build
 * @property {boolean} ahead start the read-ahead thread
 * @property {string} reason why, as the page shows it
 */

/**
 * THE rule for the codec worker's build, pool size and read-ahead thread.
 * @param {Env} env
 * @returns {Choice}
 */
export function chooseBuild({ codec, isolated, built, cores, threads, readAhead }) {
  if (!codec) return { pool: 0, ahead: false, reason: 'statistics worker' };
  if (!isolated) return { pool: 0, ahead: false, reason: 'the page is not cross-origin isolated (no SharedArrayBuffer)' };
  const helpers = cores > SHARED_CORES;
  /** @type {Choice} */
  let choice;
  if (!built) {
    choice = { pool: 0, ahead: helpers, reason: 'the threaded build was not made (no nightly toolchain with rust-src when the app was built)' };
  } else if (!helpers) {
    const n = `${cores} core${cores === 1 ? '' : 's'}`;
    choice = { pool: 0, ahead: false, reason: `${n}: helper threads would share them with the codec and slow it down (BENCHMARKS.md, issue 28)` };
  } else {
    choice = { pool: cores - 1, ahead: true, reason: `${cores} cores: a pool of ${cores - 1}, one core left for reading the file and the page` };
  }
  if (threads === null && readAhead === null) return choice;
  const asked = [threads === null ? '' : `codec-threads=${threads}`, readAhead === null ? '' : `codec-read-ahead=${readAhead}`];
  return {
    pool: built ? (threads ?? choice.pool) : 0,
    // Forced, the read-ahead thread is on unless asked off (as on every isolated page before issue 28).
    ahead: readAhead === null || readAhead !== 0,
    reason: `forced by the page's ?${asked.filter(Boolean).join('&')}${built ? '' : ' (the threaded build was not made)'}`,
  };
}
