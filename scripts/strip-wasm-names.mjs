// Drops the `name` custom section (function names for stack traces) from WebAssembly modules, in
// place: the embed's package (dist/embed/) ships without it — a hub page downloads ~30 % less —
// while the app's own build keeps it for readable panics. Every other section is copied as it is;
// the result is checked with WebAssembly.validate before it replaces the file.
//
//   node scripts/strip-wasm-names.mjs FILE.wasm...
import fs from 'node:fs';

/** Reads an unsigned LEB128 at `i`; returns [value, next index]. */
function leb(bytes, i) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[i++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) return [value, i];
  }
}

for (const file of process.argv.slice(2)) {
  const bytes = fs.readFileSync(file);
  const kept = [bytes.subarray(0, 8)];
  let dropped = 0;
  for (let i = 8; i < bytes.length; ) {
    const start = i;
    const id = bytes[i++];
    const [size, body] = leb(bytes, i);
    const end = body + size;
    let name = null;
    if (id === 0) {
      const [len, at] = leb(bytes, body);
      name = bytes.subarray(at, at + len).toString('utf8');
    }
    if (name === 'name') dropped += end - start;
    else kept.push(bytes.subarray(start, end));
    i = end;
  }
  const out = Buffer.concat(kept);
  if (!WebAssembly.validate(out)) throw new Error(`${file}: the module without its names does not validate`);
  fs.writeFileSync(file, out);
  console.error(`strip-wasm-names: ${file}: ${dropped} bytes of names dropped, ${out.length} bytes left`);
}
