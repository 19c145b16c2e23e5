// The README's screenshot: the procedure that scripts/screenshot runs still works on the
// current page (a pending pod expanded, the pane open on a drifted NodeClaim), and the
// committed docs/dashboard.png is a 1600x1000 PNG under 400 KB.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, startDemo, launchBrowser } from './helpers.mjs';
import { dashboardScreenshot, WIDTH, HEIGHT } from './screenshot.mjs';

const MAX = 400 * 1024;

function pngSize(buf) {
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'a PNG signature');
  assert.equal(buf.subarray(12, 16).toString('ascii'), 'IHDR');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

describe('the README screenshot', () => {
  let dir;
  let kelp;
  let browser;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'kelp-browser-shot-'));
    browser = await launchBrowser();
    kelp = await startDemo();
  }, { timeout: 120_000 });
  after(async () => {
    await browser?.close();
    await kelp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });

  it('can be taken: 1600x1000, a pending pod expanded, the pane open, under 400 KB', { timeout: 60_000 }, async () => {
    const file = path.join(dir, 'dashboard.png');
    const png = await dashboardScreenshot(browser, kelp.url, file);
    assert.deepEqual(pngSize(readFileSync(file)), { width: WIDTH, height: HEIGHT });
    assert.ok(png.length < MAX, `${png.length} bytes`);
  });

  it('is committed as docs/dashboard.png (scripts/screenshot writes it)', () => {
    const file = path.join(ROOT, 'docs', 'dashboard.png');
    assert.ok(existsSync(file), 'docs/dashboard.png exists: run scripts/screenshot');
    const buf = readFileSync(file);
    assert.deepEqual(pngSize(buf), { width: WIDTH, height: HEIGHT });
    assert.ok(buf.length < MAX, `docs/dashboard.png is ${buf.length} bytes`);
  });
});
