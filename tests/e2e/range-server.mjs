// A data server for the remote-file tests: serves the files of a directory on 127.0.0.1 as a model
// hub would, with `Range` requests (206 + Content-Range) and CORS headers (any origin; the
// Content-Range / Content-Length / ETag / Accept-Ranges headers exposed to the page), and no
// COOP/COEP. It counts the bytes of every body it sends, so a test can check how much of a file a
// view read. Options make it misbehave the ways a real server does:
//   range: false  → ignores Range (200 with the whole body)
//   cors: false   → sends no CORS headers (the browser refuses the answers)
//   fail5xx: N    → answers the first N requests of each path with 503 (retries must cope)
//   drop: N       → the first N GETs of each path get their status, headers and half their body,
//                   then the connection is cut (a server or proxy dying mid-transfer)
//   dropHead: N   → the first N GETs of each path get no answer at all: the connection is cut
//                   (to the page, a network failure and a CORS refusal look the same)
//   server.faults holds these counts and may be changed while it runs (a server that recovers).
//
//   const server = await startRangeServer(dir, { range, cors, fail5xx, drop, dropHead, port });
//   server.url                 'http://127.0.0.1:PORT/'
//   server.served(pathname?)   bytes sent (for one path, or all)
//   server.requests            [{ method, path, range, status, bytes }]
//   server.reset()             forget the counts and the log
//   node tests/e2e/range-server.mjs DIR [PORT] [--no-range] [--no-cors]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXPOSED = 'Content-Range, Content-Length, ETag, Accept-Ranges';

/** Parses one `bytes=a-b` / `bytes=a-` / `bytes=-n` range against `size`; null when unsatisfiable. */
function parseRange(header, size) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start;
  let end;
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  return start <= end && start < size ? { start, end } : null;
}

/** Serves `dir` with Range and CORS on 127.0.0.1; resolves to the server (see the file comment). */
export function startRangeServer(dir, { range = true, cors = true, fail5xx = 0, drop = 0, dropHead = 0, port = 0 } = {}) {
  const root = path.resolve(dir);
  const faults = { fail5xx, drop, dropHead };
  const counts = new Map();
  const failures = new Map();
  const drops = new Map();
  /** True (and counted) while `path` is still owed a fault of `kind` (its first N GETs). */
  const owed = (kind, pathname) => {
    const key = `${kind} ${pathname}`;
    const n = drops.get(key) ?? 0;
    if (n >= faults[kind]) return false;
    drops.set(key, n + 1);
    return true;
  };
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const pathname = decodeURIComponent(url.pathname);
    const headers = { 'Cache-Control': 'no-store', Vary: 'Origin' };
    if (cors) {
      headers['Access-Control-Allow-Origin'] = '*';
      headers['Access-Control-Expose-Headers'] = EXPOSED;
    }
    const log = { method: req.method, path: pathname, range: req.headers.range ?? null, status: 0, bytes: 0 };
    requests.push(log);
    const send = (status, extra, body) => {
      log.status = status;
      res.writeHead(status, { ...headers, ...extra });
      return body;
    };
    if (req.method === 'OPTIONS') {
      res.end(send(204, cors ? { 'Access-Control-Allow-Headers': 'Range', 'Access-Control-Allow-Methods': 'GET, HEAD' } : {}));
      return;
    }
    const file = path.normalize(path.join(root, pathname));
    if (!file.startsWith(root + path.sep)) {
      res.end(send(403, {}, 'forbidden'));
      return;
    }
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) {
        res.end(send(404, {}, 'not found'));
        return;
      }
      if (req.method === 'GET' && owed('dropHead', pathname)) {
        log.status = 'dropped before answering';
        req.socket.destroy();
        return;
      }
      const failed = failures.get(pathname) ?? 0;
      if (failed < faults.fail5xx) {
        failures.set(pathname, failed + 1);
        res.end(send(503, {}, 'try again'));
        return;
      }
      const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
      const base = { 'Content-Type': 'application/octet-stream', ETag: etag };
      let start = 0;
      let end = st.size - 1;
      let status = 200;
      if (range && req.headers.range) {
        const r = parseRange(req.headers.range, st.size);
        if (!r) {
          res.end(send(416, { 'Content-Range': `bytes */${st.size}` }));
          return;
        }
        ({ start, end } = r);
        status = 206;
        base['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
      }
      if (range) base['Accept-Ranges'] = 'bytes';
      const length = st.size === 0 ? 0 : end - start + 1;
      send(status, { ...base, 'Content-Length': length });
      if (req.method === 'HEAD' || length === 0) {
        res.end();
        return;
      }
      if (req.method === 'GET' && length >= 2 && owed('drop', pathname)) {
        // Status, headers and half the body on the wire, then the connection cut.
        log.dropped = true;
        const half = Math.floor(length / 2);
        const buf = Buffer.alloc(half);
        const fd = fs.openSync(file, 'r');
        fs.readSync(fd, buf, 0, half, start);
        fs.closeSync(fd);
        log.bytes += half;
        counts.set(pathname, (counts.get(pathname) ?? 0) + half);
        res.flushHeaders();
        res.write(buf, () => setTimeout(() => res.socket?.destroy(), 50));
        return;
      }
      const stream = fs.createReadStream(file, { start, end, highWaterMark: 1 << 20 });
      stream.on('data', (chunk) => {
        log.bytes += chunk.length;
        counts.set(pathname, (counts.get(pathname) ?? 0) + chunk.length);
      });
      stream.pipe(res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.url = `http://127.0.0.1:${server.address().port}/`;
      server.requests = requests;
      server.faults = faults;
      server.served = (pathname) =>
        pathname === undefined ? [...counts.values()].reduce((a, b) => a + b, 0) : counts.get(pathname) ?? 0;
      server.reset = () => {
        counts.clear();
        failures.clear();
        drops.clear();
        requests.length = 0;
      };
      resolve(server);
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const server = await startRangeServer(args[0] ?? '.', {
    port: Number(args[1] ?? 8090),
    range: !process.argv.includes('--no-range'),
    cors: !process.argv.includes('--no-cors'),
  });
  console.log(`bitlens: serving ${path.resolve(args[0] ?? '.')} with Range + CORS at ${server.url}`);
}
