// The dashboard at laptop and wide widths, measured on element boxes (not pixels): with the
// pane open no table cell overflows its column, the pane leaves the NodePools table readable
// and is clamped to the window, Escape closes it, drift is amber, the insufficient-capacity
// panel has no blank cell, the filter box and the pod-to-pool links work.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDemo, launchBrowser, watch } from './helpers.mjs';

describe('kelp demo dashboard layout', () => {
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

  async function open(width, { paneWidth } = {}) {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    const w = await watch(page);
    await page.goto(kelp.url);
    if (paneWidth) {
      await page.evaluate((v) => localStorage.setItem('kelp.paneWidth', String(v)), paneWidth);
      await page.reload();
    }
    return { context, page, w };
  }

  /** Open the pane on a drifted NodeClaim and expand a pending pod. */
  async function openPaneAndPod(page) {
    const row = page.locator('#nodeclaims tr.claim.is-drifted').first();
    const sel = await row.getAttribute('data-select');
    await row.click();
    await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
    const pod = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
    await pod.locator('.expander').click();
    await pod.locator('tr.verdicts').waitFor();
  }

  /** Every problem of the layout, as text (empty when it is right). */
  function layoutProblems(page) {
    return page.evaluate(() => {
      const out = [];
      const pane = document.getElementById('pane').getBoundingClientRect();
      for (const p of document.querySelectorAll('#panels .panel')) {
        const box = p.getBoundingClientRect();
        if (box.right > pane.left + 1) out.push(`panel #${p.id} runs under the pane (${box.right} > ${pane.left})`);
        if (p.scrollWidth > p.clientWidth + 1) out.push(`panel #${p.id} scrolls sideways (${p.scrollWidth} > ${p.clientWidth})`);
      }
      for (const td of document.querySelectorAll('#panels table td')) {
        if (!td.offsetParent) continue; // hidden column, collapsed row
        if (td.scrollWidth > td.clientWidth + 1) {
          out.push(`cell overflows its column in #${td.closest('section').id}: ${td.scrollWidth} > ${td.clientWidth}: ${td.textContent.trim().slice(0, 50)}`);
        }
        const cell = td.getBoundingClientRect();
        for (const child of td.querySelectorAll('.badge, .sevmark, code, meter')) {
          if (!child.offsetParent) continue;
          const b = child.getBoundingClientRect();
          if (b.left < cell.left - 1 || b.right > cell.right + 1) out.push(`${child.className || child.tagName} sticks out of its cell in #${td.closest('section').id}: ${child.textContent.trim()}`);
        }
      }
      // Cut identifiers say so (an ellipsis) and carry the whole text in a title.
      for (const c of document.querySelectorAll('#panels .clip')) {
        if (!c.offsetParent || c.scrollWidth <= c.clientWidth) continue;
        if (getComputedStyle(c).textOverflow !== 'ellipsis') out.push(`cut without an ellipsis: ${c.textContent}`);
        if (!c.title) out.push(`cut without a title: ${c.textContent}`);
      }
      return out;
    });
  }

  for (const width of [1024, 1600]) {
    it(`at ${width} px with the pane open (and dragged wide), nothing overflows and the NodePools table stays readable`, { timeout: 60_000 }, async () => {
      // A width saved on a wider screen: the pane must still leave the page its share.
      const { context, page, w } = await open(width, { paneWidth: 1200 });
      try {
        await openPaneAndPod(page);
        const pane = await page.locator('#pane').boundingBox();
        assert.ok(pane.width <= width * 0.4 + 1, `the pane is clamped to 40% of ${width}: ${pane.width}`);
        assert.ok(pane.x + pane.width <= width + 1, 'the pane is inside the window');
        assert.deepEqual(await layoutProblems(page), []);
        // NodePools: every pool name is whole, and the key columns have real width.
        const readable = await page.evaluate(() => {
          const out = [];
          const table = document.querySelector('#nodepools table.pools');
          const pane = document.getElementById('pane').getBoundingClientRect();
          if (table.getBoundingClientRect().right > pane.left + 1) out.push('the table runs under the pane');
          for (const c of table.querySelectorAll('tr.pool td.name .clip')) {
            if (c.scrollWidth > c.clientWidth) out.push(`pool name cut: ${c.textContent}`);
          }
          const heads = [...table.querySelectorAll('thead th')].filter((t) => t.offsetParent).map((t) => t.textContent.trim());
          for (const h of ['NodePool', 'Nodes', 'Limits', '$/hr', 'Allowed now']) if (!heads.includes(h)) out.push(`column ${h} hidden`);
          for (const th of table.querySelectorAll('thead th')) {
            if (th.offsetParent && th.getBoundingClientRect().width < 40) out.push(`column ${th.textContent} is ${th.getBoundingClientRect().width}px`);
          }
          // Limit resource names are whole (nvidia.com/gpu, aws.amazon.com/neuron).
          for (const r of table.querySelectorAll('.limit .res')) {
            if (r.scrollWidth > r.clientWidth) out.push(`limit name cut: ${r.textContent}`);
          }
          return out;
        });
        assert.deepEqual(readable, []);
        const resources = await page.locator('#nodepools .limit .res').allTextContents();
        assert.ok(resources.includes('nvidia.com/gpu'), `limit names: ${resources}`);
        assert.deepEqual(await w.all({ favicon: false }), []);
      } finally {
        await context.close();
      }
    });
  }

  it('at 1024 px, node names, zones and capacity types stay on one line with a title', { timeout: 60_000 }, async () => {
    const { context, page } = await open(1024);
    try {
      const cells = await page.evaluate(() => [...document.querySelectorAll('#nodeclaims tr.claim td .clip')]
        .filter((c) => c.offsetParent)
        .map((c) => ({ text: c.textContent, title: c.title, lines: Math.round(c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).lineHeight)) })));
      assert.ok(cells.length > 10, `${cells.length} cells`);
      for (const c of cells) {
        assert.equal(c.lines, 1, `${c.text} takes ${c.lines} lines`);
        assert.ok(c.title.length > 0 && c.text.includes(c.title), `${c.text} has its title`);
      }
    } finally {
      await context.close();
    }
  });

  it('Escape closes the pane', { timeout: 30_000 }, async () => {
    const { context, page } = await open(1280);
    try {
      await openPaneAndPod(page);
      await page.locator('body').press('Escape');
      assert.match(await page.locator('#pane').getAttribute('class'), /\bclosed\b/);
      assert.equal(await page.locator('#pane').evaluate((e) => getComputedStyle(e).display), 'none');
      assert.equal(new URL(page.url()).searchParams.get('sel'), null, 'the URL forgets the selection');
    } finally {
      await context.close();
    }
  });

  it('the yaml tab starts with apiVersion and kind, and copies to the clipboard', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open(1440);
    try {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: kelp.url });
      await openPaneAndPod(page);
      await page.locator('#pane .tabs button[data-tab="yaml"]').click();
      const yaml = await page.locator('#pane pre.yaml').textContent();
      assert.match(yaml, /^apiVersion: karpenter\.sh\/v1\nkind: NodeClaim\n/);
      await page.locator('#pane button.copy').click();
      await page.locator('#pane .copied', { hasText: 'copied' }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), yaml);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });

  it('drift is amber, not the green of a healthy condition, and the never-joined claim is marked red', { timeout: 30_000 }, async () => {
    const { context, page } = await open(1600);
    try {
      const colour = (sel) => page.locator(sel).first().evaluate((e) => getComputedStyle(e).color);
      const drifted = await colour('#nodeclaims tr.claim .badge[data-cond="Drifted"][data-state="true"]');
      const healthy = await colour('#nodeclaims tr.claim .badge[data-cond="Launched"][data-state="true"]');
      const [r, g, b] = drifted.match(/\d+/g).map(Number);
      assert.notEqual(drifted, healthy, 'Drifted=True is not coloured like Launched=True');
      assert.ok(r > g && g > b && r > 120, `Drifted=True is amber: ${drifted}`);
      // The drift bar of the rollout panel too.
      const bar = await page.locator('#rollout svg.bar .bar-fill.drift').first().evaluate((m) => getComputedStyle(m).fill);
      const [br, bg, bb] = bar.match(/\d+/g).map(Number);
      assert.ok(br > bg && bg > bb, `the drift bar is amber: ${bar}`);
      // Every row whose object has a finding shows its worst severity; critical is red.
      const critical = page.locator('#nodeclaims tr.claim.sev-critical').first();
      await page.locator('#nodeclaims tbody.group:not(.open) tr.group-head').evaluateAll((hs) => hs.forEach((h) => h.click()));
      await critical.waitFor();
      const mark = critical.locator('.sevmark.critical');
      assert.equal((await mark.textContent()).trim(), 'critical');
      const [mr, mg, mb] = (await mark.evaluate((e) => getComputedStyle(e).backgroundColor)).match(/\d+/g).map(Number);
      assert.ok(mr > 150 && mg < 100 && mb < 100, 'the critical mark is red');
    } finally {
      await context.close();
    }
  });

  it('the insufficient-capacity panel has no blank required cell', { timeout: 30_000 }, async () => {
    const { context, page } = await open(1600);
    try {
      const rows = await page.locator('#capacity table.ice tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
      assert.ok(rows.length >= 2, JSON.stringify(rows));
      for (const r of rows) for (const c of r) assert.ok(c.length > 0, `a blank cell in ${JSON.stringify(r)}`);
    } finally {
      await context.close();
    }
  });

  it('the filter box narrows every panel and its count; a pod links to its pools and back', { timeout: 30_000 }, async () => {
    const { context, page, w } = await open(1600);
    try {
      const visible = (sel) => page.locator(sel).evaluateAll((els) => els.filter((e) => e.offsetParent).length);
      const pools = await visible('#nodepools tr.pool');
      await page.locator('#filter').fill('pool:gpu');
      assert.equal(await visible('#nodepools tr.pool'), 1);
      assert.equal((await page.locator('#nodepools h2 .count').textContent()).trim(), `1 of ${pools}`);
      assert.equal(await visible('#nodeclaims tbody.group'), 1);
      await page.locator('#filter').fill('ns:ml');
      const pods = await page.locator('#pending tbody.pod').evaluateAll((els) => els.filter((e) => e.offsetParent).map((e) => e.dataset.key));
      assert.ok(pods.length >= 1 && pods.every((k) => k.startsWith('ml/')), JSON.stringify(pods));
      await page.locator('#filter').fill('trainer');
      assert.ok(await visible('#pending tbody.pod') >= 1);
      await page.locator('#filter').fill('');
      assert.equal(await visible('#nodepools tr.pool'), pools);

      const pod = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
      await pod.locator('.expander').click();
      await pod.locator('a.pool-link[data-pool="gpu"]').click();
      const row = page.locator('#pool-gpu');
      assert.match(await row.getAttribute('class'), /\bflash\b/);
      const back = row.locator('a.back-link');
      assert.equal((await back.textContent()).trim(), 'back to ml/trainer-0');
      await back.click();
      assert.ok(await pod.locator('tr.pending-row').evaluate((r) => {
        const b = r.getBoundingClientRect();
        return b.top >= 0 && b.bottom <= window.innerHeight;
      }), 'back at the pod');
      assert.match(await page.locator('#pane').getAttribute('class'), /\bclosed\b/, 'the links do not open the pane');
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });
});
