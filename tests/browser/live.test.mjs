// Live updates: `kelp serve --from FILE` re-reads the file when it changes and pushes the
// change to the page over Server-Sent Events; the page swaps its panels without a reload and
// keeps the expanded rows and the open pane.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  startServe, launchBrowser, watch, demoDump, splitDocs, joinDocs, findDoc, eventually,
} from './helpers.mjs';

/** Write atomically, so the poller never reads half a file. */
function writeDump(file, text) {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

describe('live updates (kelp serve --from a file that changes)', () => {
  let dir;
  let file;
  let kelp;
  let browser;
  let original;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kelp-browser-live-'));
    file = path.join(dir, 'live.yaml');
    original = demoDump();
    writeDump(file, original);
    browser = await launchBrowser();
    kelp = await startServe(file);
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });

  it('shows a changed dump within seconds, with no reload, keeping the expanded row and the pane', { timeout: 60_000 }, async (t) => {
    assert.match(kelp.url, /\/clusters\/live\/karpenter$/, 'the cluster is the file stem');
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const w = await watch(page);
    try {
      await page.goto(kelp.url);
      // Wait for the event stream to be connected before changing anything.
      await page.waitForFunction(() => !document.body.classList.contains('offline'));
      await page.waitForTimeout(500);
      await page.evaluate(() => { window.__noReload = 1; });
      const refreshed0 = Number(await page.evaluate(() => document.body.dataset.refreshed || '0'));

      // Expand a pending pod, open the pane on a NodeClaim, switch it to yaml.
      const trainer = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
      await trainer.locator('.expander').click();
      assert.ok(await trainer.locator('tr.verdicts').isVisible());
      const verdicts = trainer.locator('table.verdict-table tr.verdict td:first-child a.pool-link');
      assert.ok((await verdicts.allTextContents()).includes('inferentia'));
      const row = page.locator('#nodeclaims tbody.group.open tr.claim.is-drifted').first();
      const sel = await row.getAttribute('data-select');
      await row.click();
      await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
      await page.locator('#pane .tabs button[data-tab="yaml"]').click();
      assert.ok(await page.locator('#pane .tab-body[data-tab="yaml"]').isVisible());
      assert.equal(await page.locator('#nodepools tr.pool[data-select="NodePool/inferentia"]').count(), 1);
      assert.equal(await page.locator('#pending tbody.pod[data-key="ml/trainer-1"]').count(), 0);
      // Open a collapsed NodeClaim group (rows load lazily) and fold one that opened on its own.
      const gpu = page.locator('#nodeclaims tbody.group[data-pool="gpu"]');
      await gpu.locator('tr.group-head').click();
      await gpu.locator('tr.claim').first().waitFor();
      const arm64 = page.locator('#nodeclaims tbody.group[data-pool="arm64"]');
      await arm64.locator('tr.group-head').click();
      assert.equal(await arm64.locator('tr.claim:visible').count(), 0);

      // The change: NodePool inferentia is deleted, and a new pod (ml/trainer-1, a copy of
      // trainer-0 with no event of its own yet) is pending.
      const docs = splitDocs(original);
      const pod = docs[findDoc(docs, 'Pod', 'trainer-0', 'ml')]
        .replace(/^  name: trainer-0$/m, '  name: trainer-1')
        .replace(/^  uid: .*$/m, '  uid: 5a1c0de0-0000-4000-8000-00000000b001')
        .replace(/^  hostname: trainer-0$/m, '  hostname: trainer-1')
        .replace(/statefulset\.kubernetes\.io\/pod-name: trainer-0/, 'statefulset.kubernetes.io/pod-name: trainer-1');
      docs.splice(findDoc(docs, 'NodePool', 'inferentia'), 1);
      docs.push(pod);
      const changedAt = Date.now();
      writeDump(file, joinDocs(docs));

      await eventually(async () => await page.locator('#pending tbody.pod[data-key="ml/trainer-1"]').count() === 1
        && await page.locator('#nodepools tr.pool[data-select="NodePool/inferentia"]').count() === 0,
      10_000, 'the change to reach the page');
      const took = Date.now() - changedAt;
      t.diagnostic(`the change appeared ${took} ms after the file was written`);
      // The issue asks for 2 s; the file is polled every 500 ms. Allow some slack for a busy machine.
      assert.ok(took < 4000, `the change took ${took} ms to appear`);

      // No navigation happened; the page refreshed itself.
      assert.equal(await page.evaluate(() => window.__noReload), 1, 'no reload');
      await page.waitForFunction((n) => Number(document.body.dataset.refreshed || '0') > n, refreshed0);

      // The expanded row is still expanded, with the new verdicts (no inferentia any more).
      assert.ok(await trainer.locator('tr.verdicts').isVisible(), 'ml/trainer-0 still expanded');
      assert.equal(await trainer.locator('.expander').getAttribute('aria-expanded'), 'true');
      const names = await verdicts.allTextContents();
      assert.ok(!names.includes('inferentia') && names.length === 5, `verdicts now: ${names}`);

      // The pane is still open on the same object and tab.
      const pane = page.locator('#pane');
      assert.doesNotMatch(await pane.getAttribute('class'), /\bclosed\b/);
      await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
      assert.ok(await pane.locator('.tab-body[data-tab="yaml"]').isVisible(), 'still on the yaml tab');
      assert.equal(await pane.locator('.tab-body[data-tab="describe"]').isVisible(), false);
      assert.equal(new URL(page.url()).searchParams.get('sel'), sel);
      assert.match(await page.locator(`tr.claim[data-select="${sel}"]`).getAttribute('class'), /\bselected\b/);

      // The NodeClaim groups stay as they were left.
      await gpu.locator('tr.claim').first().waitFor();
      assert.match(await gpu.getAttribute('class'), /\bopen\b/, 'gpu still open');
      assert.doesNotMatch(await arm64.getAttribute('class'), /\bopen\b/, 'arm64 still folded');
      assert.equal(await arm64.locator('tr.claim:visible').count(), 0);

      // The new pod has no scheduling event yet, and says so.
      const fresh = page.locator('#pending tbody.pod[data-key="ml/trainer-1"]');
      await fresh.locator('.expander').click();
      assert.match(await fresh.locator('tr.verdicts .event').textContent(), /no scheduling event found yet/);

      // The freshness mark follows the new analysis: a dump with a capture time is shown
      // as of that time, not as "updated 3d ago".
      assert.match(await page.locator('#fresh').textContent(), /^as of \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });
});
