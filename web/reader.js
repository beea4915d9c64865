// bitlens read-ahead worker. The codec worker (worker.js, on a cross-origin isolated page) starts
// one per file it reads and asks it for the next window while the codec runs on the current one,
// so reading the File (FileReaderSync: a round trip to the browser's file backend and a copy) runs
// on this thread instead of the codec's. Windows land in slots of a SharedArrayBuffer.
//
// The codec worker sends {ping: true} and waits for the {pong: true} answer before it ever blocks:
// until a message has made it through, Chromium may still hold messages to a new worker on the
// sending thread, and a thread blocked in Atomics.wait would never pass them on.
// Messages in: {blob, data: SharedArrayBuffer, ctl: SharedArrayBuffer, slotBytes} per file, then
// {slot, id, offset, length} per window. For each window it writes the bytes to slot `slot` of
// `data` and then, in the Int32Array over `ctl`, ctl[2 * slot + 1] = length read and
// ctl[2 * slot] = id (-id when the read failed), and wakes the waiter on ctl[2 * slot].
let blob = null;
let data = null;
let ctl = null;
let slotBytes = 0;
const fr = new FileReaderSync();

self.onmessage = ({ data: msg }) => {
  if (msg.ping) {
    self.postMessage({ pong: true });
    return;
  }
  if (msg.blob) {
    ({ blob } = msg);
    data = new Uint8Array(msg.data);
    ctl = new Int32Array(msg.ctl);
    slotBytes = msg.slotBytes;
    return;
  }
  const { slot, id, offset, length } = msg;
  let status = id;
  try {
    const bytes = new Uint8Array(fr.readAsArrayBuffer(blob.slice(offset, offset + length)));
    data.set(bytes, slot * slotBytes);
    Atomics.store(ctl, 2 * slot + 1, bytes.length);
  } catch (e) {
    status = -id;
  }
  Atomics.store(ctl, 2 * slot, status);
  Atomics.notify(ctl, 2 * slot);
};
