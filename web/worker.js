// @ts-check
// bitlens worker (module worker): the JavaScript that must stay JavaScript. It loads the
// `bitlens-wasm` module, starts what a module cannot start itself, and hands every message of the
// page to the module's job loop (`runJob`, crates/wasm/src/worker), which reads the typed request
// (bitlens-protocol `WorkerRequest`), runs it and posts the typed events (`WorkerEvent`) back.
// Two roles:
//
// - statistics (`worker.js?role=stats`): the page's pool (web/src/ui/pool.rs) hands out one task
//   at a time and cancels by terminating the worker. Always the single-threaded build. It warms
//   its statistics kernels up when it starts (`warmUp`). The files' describer and the weight
//   map's workers (`worker.js`) are the same, without the warm-up.
// - codec (`worker.js?role=codec`, web/src/ui/app/codecs/runner.rs): compress / decompress /
//   snapshot index / codec round trips. `chooseBuild` (web/build-choice.js, the one place the rule
//   lives) picks its build, pool size and read-ahead thread: on a cross-origin isolated page
//   (`crossOriginIsolated` and `SharedArrayBuffer`) with more than two cores, the threaded build
//   (`threads/bitlens-wasm.js`, made by scripts/build-web.sh) whose rayon pool it starts here,
//   inside the worker (on the main thread a rayon call would busy-wait), and the read-ahead thread
//   (reader.js); elsewhere — not isolated, two cores or fewer (helper threads measured slower
//   there), no threaded build, or one that fails to start — the single-threaded build. The page
//   may force the choice for tests and benchmarks (`?codec-threads=N&codec-read-ahead=B`, passed on
//   as `&threads=N&read-ahead=B`). On any page it opens the page's output directory in the origin
//   private file system (see OUTPUT_DIR); then the module says which build runs and why
//   (`announceReady`).
//
// A module that cannot load is thrown at the top level: the page sees the worker fail (its
// `error` event) rather than waiting for answers.

/** A synchronous `read(offset, length)` of a file's bytes. @typedef {(offset: number, length: number) => Uint8Array} ReadFn */

/**
 * The exports of the `bitlens-wasm` module this file uses (both builds).
 * @typedef {object} Wasm
 * @property {(options: {module_or_path: URL}) => Promise<unknown>} default
 * @property {(threads: number) => Promise<void>} [initThreadPool] the threaded build only
 * @property {() => number} threadCount
 * @property {() => number} readAheadBytes
 * @property {(reason: string) => void} announceReady
 * @property {() => number} warmUp runs the statistics kernels on synthetic data (statistics role)
 * @property {() => boolean} warmUpCodec runs LMC both ways on synthetic data (codec role)
 * @property {(message: unknown, ahead: ((blob: Blob) => ReadFn) | null, output: FileSystemDirectoryHandle | null) => Promise<void>} runJob
 */

import { chooseBuild } from './build-choice.js';

/** This worker's global scope. */
const scope = /** @type {DedicatedWorkerGlobalScope} */ (/** @type {unknown} */ (self));
const ROLE = new URL(import.meta.url).searchParams.get('role');
const CODEC = ROLE === 'codec';

/** @param {unknown} e */
const errorText = (e) => (e instanceof Error ? e.message : String(e));

/** True when scripts/build-web.sh made the threaded build (it says so in builds.json). */
async function threadedBuilt() {
  try {
    const r = await fetch(new URL('./builds.json', import.meta.url));
    return r.ok && (await r.json()).threads === true;
  } catch (e) {
    return false;
  }
}

/**
 * Imports and instantiates one build of the module.
 * @param {string} dir '' or 'threads/'
 * @returns {Promise<Wasm>}
 */
async function instantiate(dir) {
  const m = /** @type {Wasm} */ (await import(new URL(`./${dir}bitlens-wasm.js`, import.meta.url).href));
  await m.default({ module_or_path: new URL(`./${dir}bitlens-wasm_bg.wasm`, import.meta.url) });
  return m;
}

/**
 * A number parameter of this worker's URL, or null: `threads` and `read-ahead`, the page's forced
 * choice (`?codec-threads=N&codec-read-ahead=B` of the page, web/src/ui/io/location.rs; tests and
 * benchmarks only).
 * @param {string} name
 */
function forced(name) {
  const v = new URL(import.meta.url).searchParams.get(name);
  return v !== null && /^\d+$/.test(v) ? Number(v) : null;
}

/**
 * The module the rule picks, whether to read ahead, and why.
 * @returns {Promise<{m: Wasm, ahead: boolean, reason: string}>}
 */
async function load() {
  const isolated = scope.crossOriginIsolated && typeof SharedArrayBuffer === 'function';
  const built = CODEC && isolated && (await threadedBuilt());
  const cores = Math.max(1, navigator.hardwareConcurrency || 1);
  const env = { codec: CODEC, isolated, built, cores, threads: forced('threads'), readAhead: forced('read-ahead') };
  let { pool, ahead, reason } = chooseBuild(env);
  if (pool > 0) {
    try {
      const m = await instantiate('threads/');
      if (!m.initThreadPool) throw new Error('the threaded build has no initThreadPool');
      await m.initThreadPool(pool);
      return { m, ahead, reason };
    } catch (e) {
      reason = `threaded build unavailable: ${errorText(e)}`;
    }
  }
  return { m: await instantiate(''), ahead, reason };
}

// The read-ahead helper. A synchronous `read(offset, length)` that reads ahead on another thread:
// reader.js fills two window-sized slots of a SharedArrayBuffer, the next window while the codec
// works on the current one (crates/wasm reads a file front to back, one window of readAheadBytes()
// at a time, and uses the bytes `read` returned only until it calls `read` again). It waits with
// Atomics.wait, so it needs a cross-origin isolated page (SharedArrayBuffer); elsewhere the module
// reads with FileReaderSync itself. One reader thread and one pair of slots serve every file of the
// worker in turn (request ids are unique, and the reader handles requests in order).

/**
 * @typedef {object} ReadAhead
 * @property {Worker} worker the reader thread
 * @property {number} slotBytes
 * @property {SharedArrayBuffer} data two slots of `slotBytes`
 * @property {Int32Array} ctl per slot: [id of the last answered request (-id: failed), length read]
 * @property {number} next the next request id
 */

/**
 * Starts the classic worker script at `url`: directly when it is on this worker's origin, else (the
 * embed's files on a CDN, this worker started through a same-origin shim, web/src/ui/assets.rs)
 * through a same-origin `blob:` script that imports it, since a worker cannot be started from
 * another origin's script.
 * @param {URL} url
 */
function startClassicWorker(url) {
  if (url.origin === scope.location.origin) return new Worker(url);
  const shim = new Blob([`importScripts(${JSON.stringify(url.href)});\n`], { type: 'text/javascript' });
  return new Worker(URL.createObjectURL(shim));
}

/**
 * Starts the reader thread (isolated pages only); resolves to `ahead(blob)`, or null.
 * @param {Wasm} m
 * @returns {Promise<((blob: Blob) => ReadFn) | null>}
 */
async function startReadAhead(m) {
  if (!(scope.crossOriginIsolated && typeof SharedArrayBuffer === 'function')) return null;
  const worker = startClassicWorker(new URL('./reader.js', import.meta.url));
  // A round trip before anything blocks on it (see reader.js).
  await new Promise((resolve, reject) => {
    worker.onmessage = (e) => e.data && e.data.pong && resolve(undefined);
    worker.onerror = (e) => reject(new Error(`read-ahead worker: ${e.message}`));
    worker.postMessage({ ping: true });
  });
  const slotBytes = m.readAheadBytes();
  /** @type {ReadAhead} */
  const ra = {
    worker,
    slotBytes,
    data: new SharedArrayBuffer(2 * slotBytes),
    ctl: new Int32Array(new SharedArrayBuffer(16)),
    next: 1,
  };
  return (blob) => aheadReader(ra, blob);
}

/**
 * A synchronous `read(offset, length)` over a Blob with FileReaderSync.
 * @param {Blob} blob
 * @returns {ReadFn}
 */
function syncReader(blob) {
  const fr = new FileReaderSync();
  return (offset, length) => new Uint8Array(fr.readAsArrayBuffer(blob.slice(offset, offset + length)));
}

/**
 * `read(offset, length)` of a blob through the read-ahead thread.
 * @param {ReadAhead} ra
 * @param {Blob} blob
 * @returns {ReadFn}
 */
function aheadReader(ra, blob) {
  const direct = syncReader(blob);
  const slotBytes = ra.slotBytes;
  ra.worker.postMessage({ blob, data: ra.data, ctl: ra.ctl.buffer, slotBytes });
  /** @type {({id: number, offset: number, length: number} | null)[]} per slot: its last request */
  const pending = [null, null];
  let current = -1; // the slot whose bytes the caller holds
  /** @param {number} slot @param {number} offset @param {number} length */
  const request = (slot, offset, length) => {
    const p = { id: ra.next++, offset, length };
    pending[slot] = p;
    ra.worker.postMessage({ slot, ...p });
  };
  /** @param {number} slot */
  const wait = (slot) => {
    const p = pending[slot];
    if (p === null) throw new Error(`nothing asked of slot ${slot}`);
    for (;;) {
      const v = Atomics.load(ra.ctl, 2 * slot);
      if (v === p.id) return;
      if (v === -p.id) throw new Error(`the browser could not read bytes ${p.offset}…`);
      Atomics.wait(ra.ctl, 2 * slot, v);
    }
  };
  return (offset, length) => {
    if (length > slotBytes) return direct(offset, length);
    let slot = [0, 1].find((s) => s !== current && pending[s]?.offset === offset && pending[s]?.length === length);
    if (slot === undefined) {
      // Not the window read ahead: read it into the slot the caller is done with.
      slot = current < 0 ? 0 : current;
      request(slot, offset, length);
    }
    wait(slot);
    if (Atomics.load(ra.ctl, 2 * slot + 1) !== length) throw new Error(`short read at byte ${offset}`);
    current = slot;
    const next = offset + length;
    const other = slot ^ 1;
    if (next < blob.size && pending[other]?.offset !== next) {
      request(other, next, Math.min(slotBytes, blob.size - next));
    }
    return new Uint8Array(ra.data, slot * slotBytes, length);
  };
}

// The output directory (codec worker). Compress / decompress jobs write each output file into the
// origin private file system through a sync access handle, straight from wasm memory, and hand the
// page the `File` (crates/wasm/src/worker/opfs.rs): much cheaper than posting chunks for the page
// to fold into a Blob. One directory per page, `bitlens-output/<session>`, named by the page
// (`?session=`, web/src/ui/app/codecs/runner.rs), which holds the Web Lock `bitlens-output/<session>`
// while it lives: the page's downloads stay valid across codec workers, and the directories of
// pages that are gone (their locks released) are removed here. Without sync access handles or
// Web Locks (or a session), jobs post their outputs in chunks.
const OUTPUT_DIR = 'bitlens-output';

/**
 * This page's output directory, after removing those of pages that are gone; or null.
 * @returns {Promise<FileSystemDirectoryHandle | null>}
 */
async function outputDir() {
  const session = new URL(import.meta.url).searchParams.get('session');
  const syncHandles = typeof FileSystemFileHandle === 'function' && 'createSyncAccessHandle' in FileSystemFileHandle.prototype;
  if (!CODEC || !session || !syncHandles || !navigator.storage?.getDirectory || !navigator.locks) return null;
  const all = await (await navigator.storage.getDirectory()).getDirectoryHandle(OUTPUT_DIR, { create: true });
  const held = new Set(((await navigator.locks.query()).held ?? []).map((l) => l.name));
  /** @type {string[]} */
  const gone = [];
  // @ts-ignore: the async iteration of a directory handle is not in tsconfig's libs
  for await (const name of all.keys()) if (name !== session && !held.has(`${OUTPUT_DIR}/${name}`)) gone.push(name);
  // A file still open elsewhere cannot be removed: it goes with a later page.
  await Promise.all(gone.map((name) => all.removeEntry(name, { recursive: true }).catch(() => {})));
  return all.getDirectoryHandle(session, { create: true });
}

// The module, the read-ahead helper and the output directory (codec worker), and the build
// announced to the page.
const ready = load().then(async ({ m, ahead: readAhead, reason }) => {
  // A worker of the statistics pool runs its kernels on a little synthetic data first, so the
  // browser's optimizing compiles of them come before its first task
  // (crates/wasm/src/worker/warm.rs).
  if (ROLE === 'stats') m.warmUp();
  // The codec worker likewise runs LMC both ways on a little synthetic data before its first job.
  if (CODEC) m.warmUpCodec();
  const ahead = readAhead ? await startReadAhead(m).catch(() => null) : null;
  const output = await outputDir().catch(() => null);
  if (CODEC) m.announceReady(reason);
  return { m, ahead, output };
});
ready.catch((e) =>
  setTimeout(() => {
    throw new Error(`cannot load the module: ${errorText(e)}`);
  }),
);

scope.onmessage = async (/** @type {MessageEvent} */ event) => {
  const { m, ahead, output } = await ready;
  await m.runJob(event.data, ahead, output);
};
