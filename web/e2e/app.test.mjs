// End-to-end test of the built app (dist/) in Debian's headless Chromium, driven by playwright-core
// (no browser download). Run by web/e2e.sh; screenshots land in target/web-e2e/.
//
// Environment: DIST (default <repo>/dist), PDLAUNCH (default <repo>/target/debug/pdlaunch),
// CHROMIUM (default /usr/bin/chromium), ARTIFACTS (default <repo>/target/web-e2e).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { deflateRawSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DIST = process.env.DIST ?? join(repo, 'dist');
const PDLAUNCH = process.env.PDLAUNCH ?? join(repo, 'target/debug/pdlaunch');
const ARTIFACTS = process.env.ARTIFACTS ?? join(repo, 'target/web-e2e');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** Launch flags: nothing in the background may reach the network either. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-default-apps',
  '--disable-domain-reliability',
  '--metrics-recording-only',
];

const SEED_ERROR =
  'Page size mismatch: prefill server has page_size=64, but decode server has page_size=1. ' +
  'Both servers must use the same --page-size value.';
const PRESET = 'qwen3-2p1d-nixl';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let site, context, page, work;
const requests = [];
const offOrigin = [];
const problems = [];

async function shot(name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
}

/** Accessibility check of the current view (axe-core, WCAG 2 A/AA): no serious or critical violation. */
async function accessible(view) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.help} (${v.nodes.length}x, e.g. ${v.nodes[0].target.join(' ')})`);
  });
  assert.deepEqual(violations, [], `${view}: accessibility violations`);
}

async function download(click) {
  const [d] = await Promise.all([page.waitForEvent('download'), click()]);
  const path = join(work, d.suggestedFilename());
  await d.saveAs(path);
  return { name: d.suggestedFilename(), path, bytes: readFileSync(path) };
}

/** The page's URL once the app has written its link: the fragment is compressed asynchronously, just
 * after an edit shows its output, so this waits until it has not changed for 300 ms. */
async function settledUrl() {
  let last = await page.evaluate(() => location.hash);
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await page.evaluate(() => location.hash);
    if (now === last) return page.url();
    last = now;
  }
}

async function output(tab) {
  await page.click(`#out-${tab}`);
  await page.waitForSelector(`#out-${tab}[aria-selected=true]`);
  return page.textContent('#output');
}

describe('pdlaunch web app', () => {
  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    work = mkdtempSync(join(tmpdir(), 'pdlaunch-e2e-'));
    site = await serve(DIST);
    context = await chromium.launchPersistentContext(join(work, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      acceptDownloads: true,
      viewport: { width: 1440, height: 1000 },
    });
    // Every request is logged; one for another origin is recorded and refused.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(site.origin + '/') || url.startsWith('data:') || url.startsWith('blob:')) {
        return route.continue();
      }
      offOrigin.push(url);
      return route.abort();
    });
    context.on('request', (r) => requests.push(r.url()));
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
  });

  after(async () => {
    await context?.close();
    site?.server.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('loads the app and renders output', async () => {
    await page.goto(site.origin + '/');
    await page.waitForSelector('#output');
    assert.match(await page.textContent('#output'), /sglang\.launch_server/);
    await page.waitForSelector('#diagnostics-summary[data-errors="0"]');
    await shot('builder');
  });

  it('picks a preset, reaching it with the keyboard', async () => {
    await page.focus('body');
    let tabs = 0;
    while ((await page.evaluate(() => document.activeElement?.id)) !== 'preset') {
      assert.ok(++tabs < 15, 'the example picker is reachable with Tab');
      await page.keyboard.press('Tab');
    }
    await page.selectOption('#preset', PRESET);
    await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, PRESET);
    await page.waitForSelector('#diagnostics-summary[data-errors="0"]');
  });

  it('sees PD001 beside the decode extra args when the decode page size differs', async () => {
    await page.fill('#f-decode-extra_args', '--page-size 1');
    const beside = '[data-path="decode.extra_args"] .finding[data-code="PD001"]';
    await page.waitForSelector(beside);
    assert.match(await page.locator(beside).first().textContent(), /page_size=1/);
    assert.match(await page.textContent('#diagnostics-summary'), /[1-9]\d* errors?/);
    await page.locator(beside).first().scrollIntoViewIfNeeded();
    await shot('builder-pd001');
    await accessible('builder with a finding');
  });

  it('draws the deployment, with the page-size drift on the links it concerns', async () => {
    // The decode's `--page-size 1` is still in place: each prefill-decode link carries PD001.
    await page.waitForSelector('#picture svg [data-findings~="PD001"]');
    const links = await page.locator('#picture svg .link.kv').count();
    const marked = await page.locator('#picture svg .link.kv[data-findings~="PD001"]').count();
    assert.ok(links > 0 && marked === links, `${marked} of ${links} pair links carry PD001`);
    // One box per process.
    assert.equal(await page.locator('#picture svg .process:not(.router)').count(), 3, 'two prefills and a decode');
    await page.locator('#picture').scrollIntoViewIfNeeded();
    await shot('picture-pd001');
  });

  it('applies the one-click fix with the keyboard and is clean; undo brings the finding back', async () => {
    const button = page.locator('[data-path="decode.extra_args"] .finding[data-code="PD001"] .apply-fix').first();
    await button.focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('#diagnostics-summary[data-errors="0"]');
    assert.equal(await page.locator('.finding[data-code="PD001"]').count(), 0);
    assert.equal(await page.inputValue('#f-decode-extra_args'), '');
    await page.click('#undo');
    await page.waitForSelector('.finding[data-code="PD001"]');
    await page.locator('.finding[data-code="PD001"] .apply-fix').first().click();
    await page.waitForSelector('#diagnostics-summary[data-errors="0"]');
    await shot('builder-fixed');
  });

  it('draws every example, and offers every engine\'s output', async () => {
    const examples = await page.$$eval('#preset option', (os) => os.map((o) => o.value).filter(Boolean));
    assert.ok(examples.length >= 4, examples.join(' '));
    for (const name of examples) {
      await page.selectOption('#preset', name);
      await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, name);
      await page.waitForFunction((n) => document.querySelector('#picture svg title')?.textContent.startsWith(n), name);
      await page.locator('#picture').scrollIntoViewIfNeeded();
      await page.locator('#picture').screenshot({ path: join(ARTIFACTS, `picture-${name}.png`) });
    }
    await page.selectOption('#preset', PRESET);
    await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, PRESET);
    for (const [tab, kind] of [['rbg', /kind: RoleBasedGroup/], ['slurm', /#SBATCH/], ['srtctl', /prefill:/]]) {
      assert.match(await output(tab), kind, tab);
    }
    // Dynamo ships no SGLang 0.5.23: the tab says why, as `pdlaunch render` does.
    await page.click('#out-dynamo');
    await page.waitForSelector('#output-unavailable');
    assert.match(await page.textContent('#output-unavailable'), /Dynamo/);
    await output('shell');
  });

  it('downloads shell and Kubernetes bundles byte-identical to `pdlaunch render`', async () => {
    await output('shell');
    const script = await download(() => page.click('#download-output'));
    assert.equal(script.name, `${PRESET}.sh`);
    const yaml = await download(() => page.click('#export-yaml'));
    assert.equal(yaml.name, `${PRESET}.yaml`);
    const cli = execFileSync(PDLAUNCH, ['render', yaml.path]);
    assert.ok(cli.length > 0);
    assert.ok(script.bytes.equals(cli), 'the downloaded script differs from `pdlaunch render`');
    // The JSON export is the same deployment.
    const json = await download(() => page.click('#export-json'));
    assert.ok(execFileSync(PDLAUNCH, ['render', json.path]).equals(cli));
    // So are the Kubernetes manifests.
    assert.match(await output('kubernetes'), /kind: LeaderWorkerSet/);
    const k8s = await download(() => page.click('#download-output'));
    assert.equal(k8s.name, `${PRESET}.kubernetes.yaml`);
    assert.ok(k8s.bytes.equals(execFileSync(PDLAUNCH, ['render', '--format', 'kubernetes', yaml.path])));
    await output('shell');
  });

  it('reloads the same state from the URL alone', async () => {
    await page.fill('#f-shared-page_size', '32');
    await page.waitForFunction(() => document.querySelector('#output')?.textContent.includes('--page-size 32'));
    const before = { shell: await output('shell'), yaml: await output('yaml') };
    const url = await settledUrl();
    assert.match(url, /#s=[A-Za-z0-9_-]+$/);
    await page.evaluate(() => localStorage.clear());
    await page.goto('about:blank');
    await page.goto(url);
    await page.waitForSelector('#output');
    assert.equal(await page.inputValue('#f-shared-page_size'), '32');
    assert.equal(await output('yaml'), before.yaml);
    assert.equal(await output('shell'), before.shell);
    // A link pasted into the same tab changes only the fragment; the app follows it.
    await page.fill('#f-shared-page_size', '64');
    await page.waitForFunction(() => document.querySelector('#output')?.textContent.includes('--page-size 64'));
    await page.evaluate((u) => { location.hash = new URL(u).hash; }, url);
    await page.waitForFunction(() => document.querySelector('#f-shared-page_size')?.value === '32');
    assert.match(await page.textContent('#notice'), /from the link/);
    // And from local storage alone (autosave).
    await page.goto(site.origin + '/');
    await page.waitForSelector('#output');
    assert.equal(await page.inputValue('#f-shared-page_size'), '32');
  });

  it('opens the links the app wrote before it used the browser\'s compression', async () => {
    const links = JSON.parse(readFileSync(join(repo, 'web/e2e/fixtures/links-before-compression-stream.json'), 'utf8'));
    assert.ok(links.length >= 4);
    for (const { name, fragment } of links) {
      await page.goto('about:blank');
      await page.goto(site.origin + '/' + fragment);
      await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, name);
      assert.match(await page.textContent('#output'), /sglang\.launch_server/);
    }
    // And one the app writes now opens the same.
    await page.selectOption('#preset', PRESET);
    await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, PRESET);
    await page.fill('#f-shared-page_size', '48');
    await page.waitForFunction(() => document.querySelector('#output')?.textContent.includes('--page-size 48'));
    const url = await settledUrl();
    await page.goto('about:blank');
    await page.goto(url);
    await page.waitForFunction((n) => document.querySelector('#f-name')?.value === n, PRESET);
    assert.equal(await page.inputValue('#f-shared-page_size'), '48');
    // The hostile links below keep the editor as this leaves it.
    await page.fill('#f-shared-page_size', '32');
    await settledUrl();
  });

  it('refuses hostile links with a message and leaves the editor as it was', async () => {
    const b64url = (buf) => buf.toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    // A gigabyte of zeros deflates to about a megabyte: the app stops reading at 4 MiB.
    const bomb = b64url(deflateRawSync(Buffer.alloc(1 << 30), { level: 9 }));
    const good = new URL(await settledUrl()).hash.slice('#s='.length);
    const hostile = {
      'random bytes': b64url(randomBytes(3000)),
      'a zip bomb': bomb,
      'truncated base64': good.slice(0, Math.floor(good.length / 2)),
      'text that is not base64url': '%%%not*base64%%%',
      'compressed text that is not JSON': b64url(deflateRawSync(Buffer.from('name: [unclosed'))),
    };
    const saved = await page.evaluate(() => localStorage.getItem('pdlaunch.deployment'));
    assert.ok(saved, 'an autosaved deployment to keep');
    for (const [what, payload] of Object.entries(hostile)) {
      // At start-up, and pasted into the open tab.
      for (const mode of ['start-up', 'pasted']) {
        const started = Date.now();
        await page.goto('about:blank');
        if (mode === 'start-up') {
          await page.goto(`${site.origin}/#s=${payload}`);
        } else {
          await page.goto(site.origin + '/');
          await page.waitForSelector('#output');
          await page.evaluate((p) => { location.hash = 's=' + p; }, payload);
        }
        await page.waitForFunction(() => /could not be read/.test(document.querySelector('#notice')?.textContent ?? ''),
          null, { timeout: 10000 });
        assert.ok(Date.now() - started < 10000, `${what} (${mode}) took ${Date.now() - started} ms`);
        assert.equal(await page.inputValue('#f-shared-page_size'), '32', `${what} (${mode}) changed the editor`);
        assert.equal(await page.evaluate(() => localStorage.getItem('pdlaunch.deployment')), saved, what);
        assert.match(await page.textContent('#output'), /--page-size 32/);
      }
    }
    await shot('hostile-link');
  });

  it('lints a drifted script and opens it in the builder', async () => {
    const drifted = readFileSync(join(repo, 'web/e2e/fixtures/drifted.sh'), 'utf8');
    await page.click('#nav-lint');
    await page.fill('#lint-input', drifted);
    await page.waitForSelector('.lint .finding[data-code="PD001"]');
    assert.ok((await page.locator('.lint .source .line.hit').count()) > 0, 'offending lines are highlighted');
    // The script does not say its GPUs: named per side, the rules that need them run.
    assert.ok((await page.locator('.lint .finding[data-code="PD036"]').count()) > 0);
    await page.selectOption('#lint-prefill-gpu', 'h200');
    await page.selectOption('#lint-decode-gpu', 'h200');
    await page.waitForSelector('.lint .finding[data-code="PD036"]', { state: 'detached' });
    // The fixed pair: both servers now use one page size.
    const fixed = await page.textContent('.fixed-text');
    assert.equal((fixed.match(/--page-size 64/g) ?? []).length, 2, fixed);
    // The picture of what was read carries the drift on its link.
    await page.waitForSelector('#lint-picture svg .link.kv[data-findings~="PD001"]');
    await shot('lint');
    // The reconstructed deployment keeps one page size for both sides: the drift is resolved.
    await page.click('#lint-open');
    await page.waitForSelector('#output');
    assert.equal(await page.inputValue('#f-shared-page_size'), '64');
    assert.equal(await page.locator('.finding[data-code="PD001"]').count(), 0);
    assert.match(await page.textContent('#notice'), /Opened/);
    await page.click('#nav-lint');
    await accessible('lint');
  });

  it('explains the seed error as PD001', async () => {
    await page.click('#nav-explain');
    // With nothing pasted, every rule is listed; one click explains it.
    await page.click('#rule-list summary');
    await page.click('#rule-list button:has-text("PD046")');
    await page.waitForSelector('.explanation[data-code="PD046"]');
    assert.match(await page.textContent('.explanation[data-code="PD046"]'), /Lint tab reports it/);
    await page.fill('#explain-input', SEED_ERROR);
    await page.waitForSelector('.explanation[data-code]');
    assert.equal(await page.getAttribute('.explanation[data-code]', 'data-code'), 'PD001');
    await shot('explain');
    await accessible('explain');
    // A log excerpt with three known messages and a traceback between them: three explanations,
    // in order, each under its line.
    const log = ['INFO starting', 'Traceback (most recent call last):',
      '  File "decode.py", line 3480, in process_decode_queue', 'ZeroDivisionError: integer modulo by zero',
      "ERROR Prefill server does not support 'fake' as the transfer backend", SEED_ERROR, SEED_ERROR].join('\n');
    await page.fill('#explain-input', log);
    await page.waitForSelector('.explanation[data-code="PD052"]');
    const first = await page.$$eval('.explanation .log-line', (ls) => ls.map((l) => l.textContent));
    assert.deepEqual(first.filter((l, i) => first.indexOf(l) === i).map((l) => l.split(':')[0]),
      ['Line 4', 'Line 5', 'Line 6']);
    assert.equal(await page.locator('.explanation[data-code="PD001"]').count(), 1);
  });

  it('is readable on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('#nav-builder');
    await page.waitForSelector('#output');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `page is ${overflow}px wider than the phone`);
    await shot('phone');
  });

  it('sent no request off the origin, and logged no error', async () => {
    assert.ok(requests.length > 0);
    assert.deepEqual(offOrigin, []);
    const foreign = requests.filter((u) => !u.startsWith(site.origin + '/') && !/^(data|blob):/.test(u));
    assert.deepEqual(foreign, []);
    assert.deepEqual(problems, []);
    writeFileSync(join(ARTIFACTS, 'requests.txt'), requests.join('\n') + '\n');
  });
});
