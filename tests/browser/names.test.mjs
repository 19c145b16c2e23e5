// Names that need encoding: a pending pod whose name holds a space, '+', '&', '#', '?', '='
// and a non-ASCII letter (a dump can hold any name) opens the detail pane from its row, from
// the URL after a reload, and its verdicts expand; nothing is mangled on the way through the
// data attribute, the script's URLs and the server's query and path parsing.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServe, launchBrowser, watch, demoDump, splitDocs, joinDocs, findDoc, yq } from './helpers.mjs';

const NAME = 'Trainer+1 ü&#?=x';
const KEY = `Pod/ml/${NAME}`;

function dumpWithAnOddName() {
  const docs = splitDocs(demoDump());
  const copy = docs[findDoc(docs, 'Pod', 'trainer-0', 'ml')]
    .replace(/^  name: trainer-0$/m, `  name: ${yq(NAME)}`)
    .replace(/^  uid: .*$/m, '  uid: odd-name-0');
  assert.ok(copy.includes(yq(NAME)), 'the name was planted');
  return joinDocs([...docs, copy]);
}

describe('names that need encoding', () => {
  let dir;
  let kelp;
  let browser;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kelp-browser-names-'));
    const file = path.join(dir, 'odd.yaml');
    writeFileSync(file, dumpWithAnOddName());
    browser = await launchBrowser();
    kelp = await startServe(file);
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });

  it('open the pane from the row and from the URL, and expand their verdicts', { timeout: 60_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const w = await watch(page);
    try {
      assert.equal((await page.goto(kelp.url)).status(), 200);
      const row = page.locator('#pending tbody.pod', { hasText: NAME });
      assert.equal(await row.count(), 1, 'the pending row');
      assert.equal(await row.getAttribute('data-key'), `ml/${NAME}`);
      // Its verdicts expand.
      await row.locator('.expander').click();
      await row.locator('tr.verdicts tr.verdict').first().waitFor();
      // Its pane opens from the row.
      await row.locator('tr.row-select').click();
      const head = page.locator('#pane-body .pane-head');
      await head.waitFor();
      assert.equal(await head.getAttribute('data-select'), KEY);
      assert.equal((await head.locator('.obj').textContent()).trim(), `ml/${NAME}`);
      assert.match(await page.locator('#pane-body .tab-body[data-tab="describe"]').textContent(), /NODEPOOL/);
      // The selection is in the URL; a reload renders the same pane on the server.
      await page.locator('#pane .tabs button[data-tab="yaml"]').click();
      assert.equal(new URL(page.url()).searchParams.get('sel'), KEY);
      await page.reload();
      await head.waitFor();
      assert.equal(await head.getAttribute('data-select'), KEY);
      assert.ok(await page.locator('#pane-body .tab-body[data-tab="yaml"]').isVisible(), 'the yaml tab kept');
      assert.match(await page.locator('#pane-body .tab-body[data-tab="yaml"] .masked').textContent(), /masked/);
      assert.deepEqual(await w.all({ favicon: false }), []);
    } finally {
      await context.close();
    }
  });
});
