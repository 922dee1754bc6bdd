// A static file server for dist/ on 127.0.0.1 (an ephemeral port), for the e2e test and bench. It
// sends each file gzipped (level 9, as `size.mjs` counts it) to a browser that accepts gzip, as
// static hosts do, so a throttled load moves the bytes a user's would.
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
};

/** Serves `dir`; resolves to { server, origin, served } where `served` lists every path asked for. */
export async function serve(dir) {
  const served = [];
  // Each file gzipped once, as a static host keeps it.
  const gzipped = new Map();
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    served.push(path);
    const file = normalize(join(dir, path.endsWith('/') ? path + 'index.html' : path));
    if (!file.startsWith(normalize(dir))) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      const headers = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' };
      if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
        headers['content-encoding'] = 'gzip';
        res.writeHead(200, headers);
        if (!gzipped.has(file)) gzipped.set(file, gzipSync(body, { level: 9 }));
        res.end(gzipped.get(file));
      } else {
        res.writeHead(200, headers);
        res.end(body);
      }
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, origin: `http://127.0.0.1:${server.address().port}`, served };
}
