// The timeline over serve's history: with `--state-dir`, the timeline panel offers 1 h,
// 24 h and 7 d of the history (and a pool and a lane) beside the live 3 hours, and each
// mark opens its object in the pane; the choice holds across a live refresh.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  startKelp, launchBrowser, watch, demoDump, eventually, splitDocs, joinDocs, findDoc,
} from './helpers.mjs';

describe('the timeline over the history (kelp serve --state-dir)', () => {
  let dir;
  let file;
  let original;
  let kelp;
  let browser;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kelp-browser-history-'));
    file = path.join(dir, 'demo.yaml');
    original = demoDump();
    writeFileSync(file, original);
    const state = path.join(dir, 'state');
    browser = await launchBrowser();
    kelp = await startKelp((d, m) => ['serve', '--from', file, '--state-dir', state,
      '--dashboard-addr', `127.0.0.1:${d}`, '--metrics-addr', `127.0.0.1:${m}`], { ports: 2 });
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });

  it('picks a range, a pool and a lane, and a mark opens its object', { timeout: 60_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const w = await watch(page);
    try {
      await page.goto(kelp.url);
      const controls = page.locator('#timeline .tl-controls');
      await controls.waitFor();
      assert.equal(await controls.locator('button.active').textContent(), '3h');
      const live = await page.locator('#timeline circle.mark').count();
      // A week of the history: at least what the live three hours show (the writer may
      // still be at work on the first pass's rows).
      await controls.locator('button[data-range="7d"]').click();
      await eventually(async () => (await page.locator('#timeline .tl-span').textContent()) === 'last 7d'
        && await page.locator('#timeline circle.mark').count() >= Math.max(live, 1), 15_000, 'a week of marks');
      const week = await page.locator('#timeline circle.mark').count();
      // One lane: fewer marks, all of that lane.
      await controls.locator('select.tl-lane').selectOption('launch');
      await eventually(async () => (await page.locator('#timeline .tl-span').textContent()) === 'last 7d, launch', 10_000, 'the lane picked');
      const launches = await page.locator('#timeline circle.mark').count();
      assert.ok(launches >= 1 && launches <= week, `${launches} launches of ${week} marks`);
      assert.equal(await page.locator('#timeline circle.mark:not(.launch)').count(), 0);
      // A mark opens its NodeClaim in the pane.
      const mark = page.locator('#timeline circle.mark.row-select').first();
      const sel = await mark.getAttribute('data-select');
      assert.match(sel, /^NodeClaim\//);
      await mark.click();
      await eventually(async () => (await page.locator('#pane .pane-head').getAttribute('data-select')) === sel, 10_000, 'the pane on the mark');
      // A live refresh (the dump changes: a NodePool goes) keeps the range and the lane.
      const refreshed0 = Number(await page.evaluate(() => document.body.dataset.refreshed || '0'));
      const docs = splitDocs(original);
      docs.splice(findDoc(docs, 'NodePool', 'inferentia'), 1);
      writeFileSync(`${file}.tmp`, joinDocs(docs));
      renameSync(`${file}.tmp`, file);
      await page.waitForFunction((n) => Number(document.body.dataset.refreshed || '0') > n, refreshed0, { timeout: 15_000 });
      await eventually(async () => (await page.locator('#timeline .tl-span').textContent()) === 'last 7d, launch'
        && await page.locator('#timeline circle.mark').count() === launches, 10_000, 'the range and lane kept');
      assert.equal(await controls.locator('button.active').textContent(), '7d');
      assert.equal(await controls.locator('select.tl-lane').inputValue(), 'launch');
      assert.equal(await page.locator('#timeline circle.mark:not(.launch)').count(), 0);
      // Back to the live three hours.
      await controls.locator('select.tl-lane').selectOption('');
      await page.locator('#timeline .tl-controls button[data-range="3h"]').click();
      await eventually(async () => (await page.locator('#timeline circle.mark').count()) === live, 10_000, 'the live window again');
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });
});
