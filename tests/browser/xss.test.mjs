// Escaping: a dump whose names, labels, annotations, event and condition messages carry
// HTML/script payloads renders them as text, no script runs (with the CSP, and without it,
// to show that escaping alone holds), and every response carries a CSP with no inline script.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  startServe, launchBrowser, watch, demoDump, splitDocs, joinDocs, findDoc, findEvents,
  setTopLevel, addMeta, yq,
} from './helpers.mjs';

const IMG = '<img src=x onerror="window.__xss=1">';
const SCRIPT = '<script>window.__xss=1</script>';
const ATTR = '"><svg onload="window.__xss=1">';
// The cluster is the dump's file stem: a payload there lands in the title, a data attribute,
// the cluster switcher and every URL the script builds.
const CLUSTER = 'xss<b onmouseover=window.__xss=1>';

function poisonedDump() {
  const docs = splitDocs(demoDump());
  // Karpenter's FailedScheduling event for ml/trainer-0 (the pending panel shows it raw, the
  // pane's events tab in its table).
  const ev = findEvents(docs, 'Pod', 'trainer-0').find((i) => /^reportingComponent: karpenter$/m.test(docs[i]));
  assert.ok(ev !== undefined, 'the demo has a Karpenter event for ml/trainer-0');
  docs[ev] = setTopLevel(docs[ev], 'message',
    yq(`Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule) ${IMG} ${SCRIPT}`));
  // The pod itself: labels and annotations.
  const pod = findDoc(docs, 'Pod', 'trainer-0', 'ml');
  docs[pod] = addMeta(addMeta(docs[pod], 'annotations', { 'kelp.test/note': SCRIPT + ATTR }), 'labels', { 'kelp.test/label': IMG });
  // NodePool legacy: its NodeClassReady condition message (the Ready badge's title attribute,
  // the verdict reasons), annotations, labels and a requirement value.
  const pool = findDoc(docs, 'NodePool', 'legacy');
  docs[pool] = addMeta(addMeta(docs[pool], 'annotations', { 'kelp.test/note': IMG + ATTR }), 'labels', { 'kelp.test/label': SCRIPT })
    .replace(/^    message: NodeClass not found on cluster$/m, `    message: ${yq(`NodeClass not found ${ATTR} ${IMG}`)}`)
    .replace(/^    message: NodeClassReady=False$/m, `    message: ${yq(`NodeClassReady=False ${ATTR} ${IMG}`)}`)
    .replace(/^(      - key: karpenter\.k8s\.aws\/instance-family\n        operator: In\n        values:\n)/m, `$1        - ${yq(`c5${IMG}`)}\n`);
  assert.ok(docs[pool].includes(`c5${IMG}`.replace(/'/g, "''")), 'the requirement value was planted');
  return joinDocs(docs);
}

describe('escaping and the Content-Security-Policy', () => {
  let dir;
  let kelp;
  let browser;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kelp-browser-xss-'));
    const file = path.join(dir, `${CLUSTER}.yaml`);
    writeFileSync(file, poisonedDump());
    browser = await launchBrowser();
    kelp = await startServe(file);
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });

  it('sends a Content-Security-Policy without unsafe-inline on the page and its fragments', { timeout: 30_000 }, async () => {
    const base = kelp.url;
    for (const u of [base, `${base}/panels`, `${base}/pane?sel=Pod/ml/trainer-0`, `${base}/nodeclaims/gpu`, `${kelp.origin}/static/kelp.js`]) {
      const r = await fetch(u);
      assert.equal(r.status, 200, u);
      const csp = r.headers.get('content-security-policy');
      assert.ok(csp, `${u}: a Content-Security-Policy header`);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/, `${u}: ${csp}`);
      assert.match(csp, /(^|;)\s*script-src 'self'(;|$)/, `${u}: scripts only from the origin: ${csp}`);
      assert.match(csp, /(^|;)\s*default-src 'none'/, `${u}: ${csp}`);
    }
  });

  for (const bypassCSP of [false, true]) {
    it(`renders the payloads as text and runs no script (${bypassCSP ? 'CSP bypassed: escaping alone' : 'with the CSP'})`, { timeout: 60_000 }, async () => {
      const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, bypassCSP });
      const page = await context.newPage();
      const w = await watch(page);
      try {
        const res = await page.goto(kelp.url);
        assert.equal(res.status(), 200);
        assert.ok(res.headers()['content-security-policy'], 'the page has a CSP');
        assert.equal(await page.title(), `Karpenter · ${CLUSTER} · kelp`, 'the cluster name is text in the title');
        assert.equal(await page.locator('nav.clusters a.current').textContent(), CLUSTER);
        assert.equal(await page.evaluate(() => document.body.dataset.cluster), CLUSTER);

        // Pending panel: the raw event shows the payload as text.
        const pod = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
        await pod.locator('.expander').click();
        const raw = pod.locator('.event pre.raw');
        assert.ok(await raw.isVisible());
        const rawText = await raw.textContent();
        assert.ok(rawText.includes(IMG) && rawText.includes(SCRIPT), `raw event as text: ${rawText}`);
        // The NodePool condition message, in the verdict reasons and in the Ready badge's title.
        const reasons = await pod.locator('table.verdict-table').textContent();
        assert.ok(reasons.includes(IMG), `reasons as text: ${reasons}`);
        const title = await page.locator('#nodepools tr.pool[data-select="NodePool/legacy"] .badge[title]').first().getAttribute('title');
        assert.ok(title.includes(ATTR) && title.includes(IMG), `Ready title as one attribute: ${title}`);

        // The pane: the pod's events tab, and the pool's yaml (annotation, label, requirement).
        await pod.locator('tr.pending-row td.name').click();
        await page.locator('#pane-body .pane-head[data-select="Pod/ml/trainer-0"]').waitFor();
        await page.locator('#pane .tabs button[data-tab="events"]').click();
        const events = page.locator('#pane .tab-body[data-tab="events"]');
        assert.ok(await events.isVisible());
        assert.ok((await events.textContent()).includes(IMG), 'event message as text in the events tab');
        await page.locator('#nodepools tr.pool[data-select="NodePool/legacy"] td.name').click();
        await page.locator('#pane-body .pane-head[data-select="NodePool/legacy"]').waitFor();
        await page.locator('#pane .tabs button[data-tab="yaml"]').click();
        const yaml = await page.locator('#pane .tab-body[data-tab="yaml"]').textContent();
        for (const p of [`c5${IMG}`, SCRIPT]) assert.ok(yaml.includes(p) || yaml.includes(p.replace(/"/g, '\\"')), `yaml shows ${p} as text`);

        // A live refresh swaps the panels in through innerHTML: still inert.
        await page.evaluate(() => fetch(document.body.dataset.base + '/panels').then((r) => r.text()).then((h) => {
          document.getElementById('panels').innerHTML = h;
        }));
        await page.locator('#pending tbody.pod[data-key="ml/trainer-0"] tr.pending-row').hover();
        await page.locator('nav.clusters a.current').hover();
        await page.waitForTimeout(500);

        // Nothing was parsed as markup, and nothing ran.
        const dom = await page.evaluate(() => ({
          xss: typeof window.__xss,
          scripts: [...document.scripts].map((s) => s.getAttribute('src')),
          imgs: document.querySelectorAll('img').length,
          // The timeline, and one drift bar per rollout row (both kelp's own markup).
          svgs: [...document.querySelectorAll('svg')].filter((s) => !(s.matches('svg.bar') && s.closest('#rollout tr.rollout'))).map((s) => s.getAttribute('class')),
          bars: document.querySelectorAll('svg.bar').length === document.querySelectorAll('#rollout tr.rollout').length,
          handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
          bolds: [...document.querySelectorAll('b')].filter((b) => b.hasAttribute('onmouseover')).length,
        }));
        assert.deepEqual(dom, {
          xss: 'undefined', scripts: ['/static/kelp.js'], imgs: 0, svgs: ['timeline'], bars: true, handlers: 0, bolds: 0,
        });
        if (!bypassCSP) assert.deepEqual(await w.all({ favicon: false }), [], 'no console error, no CSP violation');
      } finally {
        await context.close();
      }
    });
  }
});
