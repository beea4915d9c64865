// The browser's own floor for the page's whole-file compress / decompress (issue 28): a Web
// Worker reads an input File the way the codec worker does (a BYOB stream in 8 MiB windows, each
// copied into a WebAssembly.Memory) and writes an output of a given size the way it does (8 MiB
// writes to a file of the origin private file system, the page taking it with getFile() and an
// object URL), interleaved as a codec would, with no codec. Timed in the page from its message to
// the worker to the output's URL, as the app's own click-to-result time is
// (tests/e2e/page-codec.mjs). bench-page-io.mjs measures each read and write variant apart; this is
// the pair the app uses, in the same browser and rounds as the app.
//
//   const floor = await openFloorPage(context);
//   const ms = await floor.run(inputPath, outputBytes);    ...    await floor.close();
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './serve.mjs';

const PAGE = `<!doctype html><meta charset=utf-8><input type=file id=f>
<script type=module>
const worker = new Worker('floor.js');
window.runFloor = (out) => new Promise((resolve) => {
  const file = document.getElementById('f').files[0];
  const t0 = performance.now();
  worker.onmessage = async ({ data }) => {
    if (data.error) return resolve({ error: data.error });
    const root = await navigator.storage.getDirectory();
    const got = await (await root.getFileHandle(data.name)).getFile();
    const url = URL.createObjectURL(got);
    const ms = performance.now() - t0;
    URL.revokeObjectURL(url);
    await root.removeEntry(data.name);
    resolve({ ms, read: data.read, written: got.size });
  };
  worker.postMessage({ file, out });
});
</script>`;

const WORKER = `
const WINDOW = 8 << 20;
const mem = new WebAssembly.Memory({ initial: 260, maximum: 65536 });
const heap = new Uint8Array(mem.buffer);
for (let i = 0; i < heap.length; i += 4096) heap[i] = 1;
let scratch = new ArrayBuffer(WINDOW);
onmessage = async ({ data: { file, out } }) => {
  const name = 'floor-' + Math.random().toString(36).slice(2);
  try {
    const root = await navigator.storage.getDirectory();
    const handle = await (await root.getFileHandle(name, { create: true })).createSyncAccessHandle();
    const reader = file.stream().getReader({ mode: 'byob' });
    let read = 0, written = 0;
    try {
      for (;;) {
        let filled = 0;
        while (filled < WINDOW && read + filled < file.size) {
          const { value, done } = await reader.read(new Uint8Array(scratch, filled, WINDOW - filled));
          if (done) break;
          scratch = value.buffer;
          filled += value.length;
        }
        if (filled === 0) break;
        heap.set(new Uint8Array(scratch, 0, filled));
        read += filled;
        // The output so far in proportion to the input read, in windows of at most 8 MiB.
        const due = read >= file.size ? out : Math.floor((out * read) / file.size);
        while (written < due) {
          const n = Math.min(WINDOW, due - written);
          if (handle.write(heap.subarray(0, n), { at: written }) !== n) throw new Error('short write');
          written += n;
        }
      }
    } finally {
      handle.close();
    }
    postMessage({ name, read });
  } catch (e) {
    postMessage({ error: String(e) });
  }
};
`;

/** A page in `context` that measures the floor; `run(input, outBytes)` gives milliseconds. */
export async function openFloorPage(context) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bitlens-floor-'));
  fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
  fs.writeFileSync(path.join(dir, 'floor.js'), WORKER);
  const server = await startServer(dir, 0, { isolate: false });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  await page.waitForFunction(() => typeof window.runFloor === 'function');
  let given = null;
  return {
    /** Milliseconds to read `input` and write `outBytes` (checked: every byte read, every byte written). */
    async run(input, outBytes) {
      if (given !== input) {
        await page.setInputFiles('#f', input);
        given = input;
      }
      const r = await page.evaluate((out) => window.runFloor(out), outBytes);
      if (r.error) throw new Error(`floor: ${r.error}`);
      const size = fs.statSync(input).size;
      if (r.read !== size || r.written !== outBytes) {
        throw new Error(`floor: read ${r.read} of ${size}, wrote ${r.written} of ${outBytes}`);
      }
      return r.ms;
    },
    async close() {
      await page.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
