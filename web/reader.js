// @ts-check
// bitlens read-ahead worker. The codec worker (worker.js, on a cross-origin isolated page) starts
// one and asks it for the next window of the file it reads while the codec runs on the current
// one, so reading the File (FileReaderSync: a round trip to the browser's file backend and a copy)
// runs on this thread instead of the codec's. Windows land in slots of a SharedArrayBuffer.
//
// The codec worker sends {ping: true} and waits for the {pong: true} answer before it ever blocks:
// until a message has made it through, Chromium may still hold messages to a new worker on the
// sending thread, and a thread blocked in Atomics.wait would never pass them on.
// Messages in: {blob, data: SharedArrayBuffer, ctl: SharedArrayBuffer, slotBytes} per file, then
// {slot, id, offset, length} per window. For each window it writes the bytes to slot `slot` of
// `data` and then, in the Int32Array over `ctl`, ctl[2 * slot + 1] = length read and
// ctl[2 * slot] = id (-id when the read failed), and wakes the waiter on ctl[2 * slot].

/**
 * @typedef {{ping: true}} Ping
 * @typedef {{blob: Blob, data: SharedArrayBuffer, ctl: SharedArrayBuffer, slotBytes: number}} NewFile
 * @typedef {{slot: number, id: number, offset: number, length: number}} Window
 */

/** This worker's global scope. */
const scope = /** @type {DedicatedWorkerGlobalScope} */ (/** @type {unknown} */ (self));
/** @type {Blob | null} */
let blob = null;
/** @type {Uint8Array} */
let data = new Uint8Array(0);
/** @type {Int32Array} */
let ctl = new Int32Array(0);
let slotBytes = 0;
const fr = new FileReaderSync();

scope.onmessage = (/** @type {MessageEvent<Ping | NewFile | Window>} */ { data: msg }) => {
  if ('ping' in msg) {
    scope.postMessage({ pong: true });
    return;
  }
  if ('blob' in msg) {
    ({ blob } = msg);
    data = new Uint8Array(msg.data);
    ctl = new Int32Array(msg.ctl);
    slotBytes = msg.slotBytes;
    return;
  }
  const { slot, id, offset, length } = msg;
  let status = id;
  try {
    if (blob === null) throw new Error('no file yet');
    const bytes = new Uint8Array(fr.readAsArrayBuffer(blob.slice(offset, offset + length)));
    data.set(bytes, slot * slotBytes);
    Atomics.store(ctl, 2 * slot + 1, bytes.length);
  } catch (e) {
    status = -id;
  }
  Atomics.store(ctl, 2 * slot, status);
  Atomics.notify(ctl, 2 * slot);
};
