// The app's transfer size: every file of dist/ a first visit downloads (wasm, js, css, html),
// gzipped at level 9 as a server would send it. Budget: 576 KiB. Run as a script (by web/e2e.sh,
// so the test command fails a build over budget) or imported (by bench.mjs).

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const BUDGET_BYTES = 576 * 1024;
const SENT = ['.wasm', '.js', '.css', '.html'];

/** Each file's raw and gzipped size, and the gzipped total. */
export function transferSize(dist) {
  const files = readdirSync(dist)
    .filter((f) => SENT.includes(extname(f)))
    .sort()
    .map((name) => {
      const raw = readFileSync(join(dist, name));
      return { name, raw: raw.length, gzipped: gzipSync(raw, { level: 9 }).length };
    });
  if (!files.some((f) => f.name.endsWith('.wasm'))) throw new Error(`${dist} holds no .wasm: build the app first`);
  return { files, total: files.reduce((n, f) => n + f.gzipped, 0) };
}

/** The lines that report a size. */
export function report({ files, total }) {
  return [
    'dist/ transfer size (wasm + js + css + html):',
    ...files.map((f) => `  ${f.name}: ${f.raw} bytes, ${f.gzipped} gzipped`),
    `  total gzipped: ${total} bytes = ${(total / 1024).toFixed(1)} KiB (budget ${BUDGET_BYTES / 1024} KiB: ` +
      `${total <= BUDGET_BYTES ? 'within budget' : 'OVER BUDGET'})`,
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const size = transferSize(process.env.DIST ?? join(repo, 'dist'));
  console.log(report(size));
  if (size.total > BUDGET_BYTES) {
    console.error(`the app is ${size.total - BUDGET_BYTES} bytes over its ${BUDGET_BYTES / 1024} KiB budget`);
    process.exit(1);
  }
}
