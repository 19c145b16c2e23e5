// The dashboard of `kelp demo` in real Chromium: panels, pending-pod expansion, the detail
// pane and its tabs, the resizable pane, no console errors and no CSP violations.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, launchBrowser, watch } from './helpers.mjs';

// What the bundled demo holds (demo/README.md).
const POOLS = ['arm64', 'batch', 'default', 'gpu', 'inferentia', 'legacy'];

describe('kelp demo dashboard', () => {
  let kelp;
  let browser;
  before(async () => {
    browser = await launchBrowser();
    kelp = await startDemo();
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
  }, { timeout: 30_000 });

  /** A fresh context (own localStorage), a watched page on the demo. */
  async function open(search = '') {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const w = await watch(page);
    const res = await page.goto(kelp.url + search);
    assert.equal(res.status(), 200);
    return { context, page, w };
  }

  it('shows each scheduled pool\'s budget week and where each rollout stands', { timeout: 60_000 }, async () => {
    const { context, page, w } = await open();
    try {
      // arm64 and default have scheduled budgets: a week strip, an hour a cell (the first
      // day padded to its hour), each cell titled with what the budgets allow.
      for (const pool of ['arm64', 'default']) {
        const week = page.locator(`#nodepools tr.pool[data-pool="${pool}"] .week`);
        assert.equal(await week.count(), 1, `${pool} week strip`);
        const hours = week.locator('.h:not(.past)');
        assert.equal(await hours.count(), 168, `${pool}: 7 days of hours`);
        const title = await hours.first().getAttribute('title');
        assert.match(title, /^\w{3} \d{2}:00 UTC: Underutilized \S+, Empty \S+, Drifted \S+$/);
        assert.ok(await week.isVisible(), `${pool} strip visible`);
      }
      // arm64's Drifted budget is 0 from 06:00 for 8 hours each day: some hours are partly shut.
      assert.ok(await page.locator('#nodepools tr.pool[data-pool="arm64"] .week .h.some').count() > 0);
      // Pools whose budgets have no schedule have no strip.
      assert.equal(await page.locator('#nodepools tr.pool[data-pool="gpu"] .week').count(), 0);
      // The rollout panel says where each drifted pool's rollout stands.
      const progress = await page.locator('#rollout tr.rollout[data-pool="default"] .progress').innerText();
      assert.match(progress, /waiting/, progress);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('renders every panel, with no console error and no CSP violation', { timeout: 60_000 }, async () => {
    const { context, page, w } = await open();
    try {
      for (const id of ['nodepools', 'nodeclaims', 'pending', 'rollout', 'capacity', 'timeline', 'findings']) {
        const s = page.locator(`#${id}`);
        assert.equal(await s.count(), 1, `#${id} present`);
        assert.ok(await s.isVisible(), `#${id} visible`);
        assert.equal(await s.locator('.empty').count(), 0, `#${id} shows no empty state on the demo`);
      }
      const pools = await page.locator('#nodepools tr.pool').evaluateAll((rows) => rows.map((r) => r.dataset.select));
      assert.deepEqual(pools.sort(), POOLS.map((p) => `NodePool/${p}`));

      const groups = page.locator('#nodeclaims tbody.group');
      assert.ok(await groups.count() >= 2, 'NodeClaim groups');
      // Pools with a drifted claim open on their own, with their rows and a drifted badge.
      for (const pool of ['arm64', 'default']) {
        const g = page.locator(`#nodeclaims tbody.group[data-pool="${pool}"]`);
        assert.match(await g.getAttribute('class'), /\bopen\b/, `${pool} group open`);
        assert.ok(await g.locator('tr.group-head .badge.drifted').isVisible(), `${pool} drifted badge`);
        assert.ok(await g.locator('tr.claim').count() > 0, `${pool} rows`);
        assert.ok(await g.locator('tr.claim.is-drifted .badge.drifted').count() > 0, `${pool} drifted rows`);
      }
      // A pool without drift is collapsed: its rows are not shown.
      const gpu = page.locator('#nodeclaims tbody.group[data-pool="gpu"]');
      assert.doesNotMatch(await gpu.getAttribute('class'), /\bopen\b/);
      assert.equal(await gpu.locator('tr.claim:visible').count(), 0);

      const pending = await page.locator('#pending tbody.pod').evaluateAll((ts) => ts.map((t) => t.dataset.key));
      assert.ok(pending.includes('ml/trainer-0'), `pending pods: ${pending}`);
      assert.equal(await page.locator('#pending tr.verdicts:visible').count(), 0, 'verdicts start collapsed');

      assert.ok(await page.locator('#rollout tr.rollout').count() > 0, 'rollout rows');
      assert.ok(await page.locator('#capacity tbody tr, #capacity ul.offerings li').count() > 0, 'capacity rows');
      assert.ok(await page.locator('#timeline svg.timeline circle.mark').count() > 0, 'timeline marks');
      const marks = await page.locator('#timeline svg circle.mark').evaluateAll((cs) => cs.map((c) => c.getBoundingClientRect().width));
      assert.ok(marks.every((wd) => wd > 0), 'timeline marks are drawn');

      const sev = await page.locator('#findings tr.finding td:first-child').allTextContents();
      assert.ok(sev.length > 0, 'findings rows');
      const rank = { critical: 0, warning: 1, info: 2 };
      const ranks = sev.map((s) => rank[s.trim()]);
      assert.deepEqual([...ranks].sort((a, b) => a - b), ranks, 'findings ordered by severity');

      // The script ran: the demo is a dump evaluated at its capture time, so the freshness
      // mark says when ("as of ..."), never "updated 71h ago" in the stale colour.
      await page.waitForFunction(() => /^as of \d{4}-\d\d-\d\d \d\d:\d\d UTC$/.test(document.getElementById('fresh').textContent));
      assert.equal(await page.locator('#fresh.stale').count(), 0, 'the demo does not look stale');
      // Styles applied (the stylesheet loaded under the CSP).
      assert.equal(await page.locator('#pane').evaluate((e) => getComputedStyle(e).display), 'none');
      // Give the event stream and any late resource a moment, then look at what went wrong.
      await page.waitForTimeout(1000);
      assert.deepEqual(await w.all(), []);
    } finally {
      await context.close();
    }
  });

  it('compares each pool\'s NodeClaim imageIDs with status.amis in the rollout panel', { timeout: 30_000 }, async () => {
    const { context, page } = await open();
    try {
      // Every demo NodeClaim has status.imageID; the default pool's claims run AMIs of its class.
      const row = page.locator('#rollout tr.rollout', { has: page.locator('td:first-child', { hasText: /^default$/ }) });
      const text = (await row.locator('td').nth(4).textContent()).trim();
      const m = text.match(/^(\d+) current, (\d+) old$/);
      assert.ok(m, `on-current-AMI cell: ${text}`);
      assert.ok(Number(m[1]) + Number(m[2]) > 0, `the default pool's NodeClaims are counted against status.amis: ${text}`);
    } finally {
      await context.close();
    }
  });

  it('expands a pending pod to its per-NodePool verdicts and the raw event', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open();
    try {
      const pod = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
      const detail = pod.locator('tr.verdicts');
      assert.equal(await detail.isVisible(), false);
      await pod.locator('.expander').click();
      assert.ok(await detail.isVisible(), 'verdicts shown');
      assert.equal(await pod.locator('.expander').getAttribute('aria-expanded'), 'true');
      const rows = detail.locator('table.verdict-table tbody tr.verdict');
      const names = (await rows.locator('td:first-child a.pool-link').allTextContents()).map((t) => t.trim());
      assert.deepEqual([...names].sort(), POOLS, 'one verdict per NodePool');
      // Karpenter's order: weight first (arm64 50, default 10), then by name.
      assert.deepEqual(names.slice(0, 2), ['arm64', 'default']);
      for (let i = 0; i < names.length; i++) {
        const r = rows.nth(i);
        // Every pool rejects ml/trainer-0 (kelp why pod ml/trainer-0 says so).
        assert.equal((await r.locator('td').first().locator('.badge').textContent()).trim(), 'rejected', `${names[i]} verdict`);
        assert.ok((await r.locator('td.reason').textContent()).trim().length > 0, `${names[i]} has a reason`);
        assert.ok((await r.locator('td.advice').textContent()).trim().length > 0, `${names[i]} says what to change`);
      }
      const reasons = await detail.locator('table.verdict-table').textContent();
      assert.match(reasons, /did not tolerate taint nvidia\.com\/gpu=true:NoSchedule/);
      assert.match(reasons, /NodeClassNotFound/);
      const raw = detail.locator('.event pre.raw');
      assert.ok(await raw.isVisible(), 'the raw Karpenter event is shown');
      assert.match(await raw.textContent(), /^Failed to schedule pod, /);
      assert.match(await detail.locator('.event').textContent(), /FailedScheduling, v1\.5\+ format/);

      // Collapses again.
      await pod.locator('.expander').click();
      assert.equal(await detail.isVisible(), false);
      assert.equal(await pod.locator('.expander').getAttribute('aria-expanded'), 'false');
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('opens the pane from a NodeClaim row, switches tabs, and reopens it from the URL', { timeout: 60_000 }, async () => {
    const { context, page, w } = await open();
    try {
      const row = page.locator('#nodeclaims tbody.group.open tr.claim.is-drifted').first();
      const sel = await row.getAttribute('data-select');
      assert.match(sel, /^NodeClaim\/[a-z0-9-]+$/);
      const name = sel.split('/')[1];
      await row.click();
      const pane = page.locator('#pane');
      await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
      assert.doesNotMatch(await pane.getAttribute('class'), /\bclosed\b/);
      assert.ok(await pane.isVisible());
      assert.match(await pane.locator('.pane-head h2').textContent(), new RegExp(`NodeClaim\\s+${name}`));
      assert.match(await row.getAttribute('class'), /\bselected\b/, 'the row is marked selected');
      let u = new URL(page.url());
      assert.equal(u.searchParams.get('sel'), sel);
      assert.equal(u.searchParams.get('tab'), 'describe');

      const body = (t) => pane.locator(`.tab-body[data-tab="${t}"]`);
      const tabBtn = (t) => pane.locator(`.tabs button[data-tab="${t}"]`);
      assert.ok(await body('describe').isVisible());
      assert.ok((await body('describe').textContent()).includes(name), 'describe names the claim');
      assert.equal(await body('yaml').isVisible(), false);
      assert.equal(await body('events').isVisible(), false);

      await tabBtn('yaml').click();
      assert.ok(await body('yaml').isVisible(), 'yaml shown');
      assert.equal(await body('describe').isVisible(), false, 'describe hidden');
      assert.equal(await body('events').isVisible(), false);
      assert.equal(await tabBtn('yaml').getAttribute('aria-selected'), 'true');
      assert.equal(await tabBtn('describe').getAttribute('aria-selected'), 'false');
      const yaml = await body('yaml').textContent();
      assert.match(yaml, new RegExp(`name: ${name}`));
      assert.doesNotMatch(yaml, /managedFields/);
      assert.equal(new URL(page.url()).searchParams.get('tab'), 'yaml');

      await tabBtn('events').click();
      assert.ok(await body('events').isVisible(), 'events shown');
      assert.equal(await body('yaml').isVisible(), false, 'yaml hidden');
      assert.equal(await body('describe').isVisible(), false);
      u = new URL(page.url());
      assert.equal(u.searchParams.get('sel'), sel);
      assert.equal(u.searchParams.get('tab'), 'events');

      // A reload with that URL reopens the pane on the same object and tab.
      await page.reload();
      await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
      assert.ok(await pane.isVisible(), 'pane open after reload');
      assert.ok(await body('events').isVisible(), 'events tab after reload');
      assert.equal(await body('describe').isVisible(), false);
      assert.equal(await body('yaml').isVisible(), false);
      assert.equal(await tabBtn('events').getAttribute('aria-selected'), 'true');
      await page.waitForFunction((s) => document.querySelector(`tr.claim[data-select="${s}"]`)?.classList.contains('selected'), sel);

      // Closing clears the selection from the URL.
      await page.locator('#pane-close').click();
      assert.match(await pane.getAttribute('class'), /\bclosed\b/);
      assert.equal(new URL(page.url()).searchParams.get('sel'), null);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('loads a collapsed NodeClaim group on click and opens the pane from its rows', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open();
    try {
      const g = page.locator('#nodeclaims tbody.group[data-pool="gpu"]');
      assert.equal(await g.locator('tr.claim').count(), 0, 'collapsed groups load lazily');
      await g.locator('tr.group-head').click();
      const row = g.locator('tr.claim').first();
      await row.waitFor();
      assert.match(await g.getAttribute('class'), /\bopen\b/);
      const sel = await row.getAttribute('data-select');
      await row.click();
      await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('sel'), sel);
      // Collapses again on a second click.
      await g.locator('tr.group-head').click();
      assert.equal(await row.isVisible(), false);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('shows the last row clicked even when an earlier pane answer arrives late', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open();
    try {
      const rows = page.locator('#nodeclaims tbody.group[data-pool="default"] tr.claim');
      const [a, b] = [await rows.nth(0).getAttribute('data-select'), await rows.nth(1).getAttribute('data-select')];
      let release;
      const held = new Promise((r) => { release = r; });
      let seen = 0;
      await page.route((u) => u.pathname.endsWith('/pane') && u.searchParams.get('sel') === a, async (route) => {
        seen += 1;
        await held;
        await route.continue();
      });
      await rows.nth(0).click();
      await rows.nth(1).click();
      await page.locator(`#pane-body .pane-head[data-select="${b}"]`).waitFor();
      assert.equal(seen, 1, 'the first answer was held');
      release();
      await page.waitForTimeout(800);
      assert.equal(await page.locator('#pane-body .pane-head').getAttribute('data-select'), b, 'the pane still shows the last click');
      assert.equal(new URL(page.url()).searchParams.get('sel'), b);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('resizes the pane by drag, and keeps the width across a reload', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open('?sel=NodePool/default');
    try {
      const pane = page.locator('#pane');
      await page.locator('#pane-body .pane-head[data-select="NodePool/default"]').waitFor();
      const before = (await pane.boundingBox()).width;
      const r = await page.locator('#pane-resizer').boundingBox();
      const x = r.x + r.width / 2;
      const y = r.y + Math.min(r.height / 2, 300);
      await page.mouse.move(x, y);
      await page.mouse.down();
      await page.mouse.move(x - 25, y, { steps: 5 });
      await page.mouse.move(x - 50, y, { steps: 5 });
      await page.mouse.up();
      const after = (await pane.boundingBox()).width;
      assert.ok(Math.abs(after - (before + 50)) <= 4, `dragged 50px left: width ${before} -> ${after}`);
      const saved = await page.evaluate(() => localStorage.getItem('kelp.paneWidth'));
      assert.ok(Math.abs(Number(saved) - after) <= 2, `saved width ${saved} vs ${after}`);

      await page.reload();
      await page.locator('#pane-body .pane-head[data-select="NodePool/default"]').waitFor();
      const reloaded = (await pane.boundingBox()).width;
      assert.ok(Math.abs(reloaded - after) <= 2, `width after reload ${reloaded}, before ${after}`);

      // And narrower again, by dragging right.
      const r2 = await page.locator('#pane-resizer').boundingBox();
      const x2 = r2.x + r2.width / 2;
      await page.mouse.move(x2, y);
      await page.mouse.down();
      await page.mouse.move(x2 + 150, y, { steps: 5 });
      await page.mouse.up();
      const narrower = (await pane.boundingBox()).width;
      assert.ok(Math.abs(narrower - (reloaded - 150)) <= 4, `dragged 150px right: ${reloaded} -> ${narrower}`);

      // The handle stays whole and in place when a long pane is scrolled down.
      await page.locator('#pane .tabs button[data-tab="yaml"]').click();
      const scrolled = await page.evaluate(() => {
        const els = [document.getElementById('pane'), document.getElementById('pane-body')];
        els.forEach((e) => { e.scrollTop = e.scrollHeight; });
        return els.some((e) => e.scrollTop > 0);
      });
      assert.ok(scrolled, 'the yaml of NodePool/default is longer than the screen');
      const paneBox = await pane.boundingBox();
      const r3 = await page.locator('#pane-resizer').boundingBox();
      assert.ok(Math.abs(r3.y - paneBox.y) <= 1 && Math.abs(r3.height - paneBox.height) <= 1,
        `resizer ${JSON.stringify(r3)} covers the pane's edge ${JSON.stringify(paneBox)} after scrolling`);
      const x3 = r3.x + r3.width / 2;
      await page.mouse.move(x3, y);
      await page.mouse.down();
      await page.mouse.move(x3 - 50, y, { steps: 3 });
      await page.mouse.up();
      const wider = (await pane.boundingBox()).width;
      assert.ok(Math.abs(wider - (narrower + 50)) <= 4, `dragged 50px left after scrolling: ${narrower} -> ${wider}`);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });
});
