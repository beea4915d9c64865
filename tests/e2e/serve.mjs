// A tiny static file server for the built app (dist/), bound to 127.0.0.1. It sends the
// cross-origin isolation headers (COOP/COEP) the threaded codec build needs (SharedArrayBuffer
// for wasm threads), and the right MIME types for ES modules and WebAssembly. Used by the e2e
// tests, the benchmark and scripts/serve.sh. `{isolate: false}` (or `--no-isolation`) leaves the
// headers out, as a page embedding the app elsewhere would: the codec worker then falls back to the
// single-threaded build. `{cors: true}` (or `--cors`) adds `Access-Control-Allow-Origin: *`, as a
// CDN serving the embed's files (dist/embed/) to pages of other origins does.
//
//   node tests/e2e/serve.mjs [DIR=dist] [PORT=8080] [--no-isolation] [--cors]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.md': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Starts serving `dir` on 127.0.0.1:`port` (0 = any free port); resolves to the server. */
export function startServer(dir, port = 0, { isolate = true, cors = false } = {}) {
  const root = path.resolve(dir);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    let file = path.normalize(path.join(root, decodeURIComponent(url.pathname)));
    if (!file.startsWith(root)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    const headers = isolate
      ? {
          'Cross-Origin-Opener-Policy': 'same-origin',
          'Cross-Origin-Embedder-Policy': 'require-corp',
          'Cross-Origin-Resource-Policy': 'same-origin',
          'Cache-Control': 'no-store',
        }
      : { 'Cache-Control': 'no-store' };
    if (cors) headers['Access-Control-Allow-Origin'] = '*';
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) {
        res.writeHead(404, headers).end('not found');
        return;
      }
      headers['Content-Type'] = TYPES[path.extname(file)] ?? 'application/octet-stream';
      headers['Content-Length'] = st.size;
      res.writeHead(200, headers);
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2).filter((a) => a !== '--no-isolation' && a !== '--cors');
  const isolate = !process.argv.includes('--no-isolation');
  const cors = process.argv.includes('--cors');
  const dir = args[0] ?? 'dist';
  const port = Number(args[1] ?? 8080);
  const server = await startServer(dir, port, { isolate, cors });
  const { port: actual } = server.address();
  const mode = isolate ? 'cross-origin isolated: wasm threads where built' : 'not isolated: single-threaded';
  console.log(`bitlens: serving ${path.resolve(dir)} at http://127.0.0.1:${actual}/ (${mode}; Ctrl-C to stop)`);
}
