// Bench of the built app (dist/) in Debian's headless Chromium: transfer size, start-up time and
// edit latency, measured in the browser. Run by web/bench.sh.
//
// Prints: gzipped size of dist/ (wasm + js + css + html, `size.mjs`); time from navigation to the
// first rendered output (the app's `pdlaunch-first-output` performance mark, median of fresh
// loads), on localhost and with the network throttled to 10 Mbit/s down and 40 ms round trip
// (Chromium's `Network.emulateNetworkConditions`, empty cache); and the median time from a field
// edit (an `input` event on the decode extra args) to the moment both the output and the findings
// on the page have changed.

import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';
import { report, transferSize } from './size.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DIST = process.env.DIST ?? join(repo, 'dist');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const LOADS = Number(process.env.LOADS ?? 9);
const EDITS = Number(process.env.EDITS ?? 61);
const BUDGET = { startMs: 300, throttledMs: 1000, editMs: 16 };
/** 10 Mbit/s down, 40 ms round trip. */
const THROTTLE = { offline: false, latency: 40, downloadThroughput: 10e6 / 8, uploadThroughput: 5e6 / 8 };
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const verdict = (ok) => (ok ? 'within budget' : 'OVER BUDGET');

// 1. Transfer size.
console.log(report(transferSize(DIST)));

const site = await serve(DIST);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });

// 2. Start-up: fresh context (empty cache and storage) per load.
const starts = [];
const phases = { loaded: [], state: [], findings: [] };
for (let i = 0; i < LOADS; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(site.origin + '/');
  await page.waitForSelector('#output');
  await page.waitForSelector('#diagnostics-summary[data-errors]');
  const t = await page.evaluate(() => Object.fromEntries(
    ['pdlaunch-start', 'pdlaunch-state', 'pdlaunch-first-output', 'pdlaunch-first-findings']
      .map((n) => [n, performance.getEntriesByName(n)[0]?.startTime])));
  starts.push(t['pdlaunch-first-output']);
  phases.loaded.push(t['pdlaunch-start']);
  phases.state.push(t['pdlaunch-state'] - t['pdlaunch-start']);
  phases.findings.push(t['pdlaunch-first-findings']);
  await context.close();
}
// 2b. The same on a slow network, cache empty.
const throttled = [];
for (let i = 0; i < LOADS; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.emulateNetworkConditions', THROTTLE);
  await page.goto(site.origin + '/');
  await page.waitForSelector('#output');
  throttled.push(await page.evaluate(() => performance.getEntriesByName('pdlaunch-first-output')[0]?.startTime));
  await context.close();
}

const startMs = median(starts);
console.log(`navigation to first rendered output: median ${startMs.toFixed(1)} ms over ${LOADS} fresh loads ` +
  `(min ${Math.min(...starts).toFixed(1)}, max ${Math.max(...starts).toFixed(1)}; budget ${BUDGET.startMs} ms: ${verdict(startMs <= BUDGET.startMs)})`);
console.log(`  of which: page, wasm fetched and compiled ${median(phases.loaded).toFixed(1)} ms; ` +
  `example read ${median(phases.state).toFixed(1)} ms; first render the rest (medians)`);
const throttledMs = median(throttled);
console.log(`the same at 10 Mbit/s and 40 ms round trip, cache empty: median ${throttledMs.toFixed(1)} ms over ${LOADS} loads ` +
  `(min ${Math.min(...throttled).toFixed(1)}, max ${Math.max(...throttled).toFixed(1)}; budget ${BUDGET.throttledMs} ms: ${verdict(throttledMs <= BUDGET.throttledMs)})`);
console.log(`navigation to first rendered findings (checked just after the output): median ${median(phases.findings).toFixed(1)} ms`);

// 3. Edit latency.
const context = await browser.newContext();
const page = await context.newPage();
await page.goto(site.origin + '/');
await page.waitForSelector('#output');
const edits = await page.evaluate(async (n) => {
  const until = (ok) => new Promise((done, fail) => {
    if (ok()) return done();
    const timer = setTimeout(() => { mo.disconnect(); fail(new Error('no update within 5 s')); }, 5000);
    const mo = new MutationObserver(() => { if (ok()) { clearTimeout(timer); mo.disconnect(); done(); } });
    mo.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
  const times = [];
  for (let i = 0; i < n; i++) {
    const box = document.querySelector('#f-decode-extra_args');
    const out0 = document.querySelector('#output').textContent;
    const diag0 = document.querySelector('#diagnostics-summary').textContent;
    const t0 = performance.now();
    box.value = i % 2 === 0 ? '--page-size 1' : '';
    box.dispatchEvent(new InputEvent('input', { bubbles: true }));
    await until(() => document.querySelector('#output').textContent !== out0
      && document.querySelector('#diagnostics-summary').textContent !== diag0);
    times.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 30));
  }
  return times;
}, EDITS);
const editMs = median(edits);
console.log(`field edit to updated output and findings: median ${editMs.toFixed(2)} ms over ${EDITS} edits ` +
  `(min ${Math.min(...edits).toFixed(2)}, max ${Math.max(...edits).toFixed(2)}; budget ${BUDGET.editMs} ms: ${verdict(editMs <= BUDGET.editMs)})`);

await browser.close();
site.server.close();
