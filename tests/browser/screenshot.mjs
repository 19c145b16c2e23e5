// The README's screenshot: the demo page at 1600x1000 with a pending pod expanded and the
// pane open on a drifted NodeClaim. `node tests/browser/screenshot.mjs [FILE]` (scripts/screenshot)
// writes docs/dashboard.png; screenshot.test.mjs takes the same picture into a temp dir.
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ROOT, startDemo, launchBrowser } from './helpers.mjs';

export const WIDTH = 1600;
export const HEIGHT = 1000;

/** Take the screenshot of the demo served at `url` into `file`; returns the PNG bytes. */
export async function dashboardScreenshot(browser, url, file) {
  const context = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  try {
    // The demo is evaluated at a fixed time: show it as seen a few seconds later.
    await page.clock.setFixedTime(new Date('2026-11-21T10:00:04Z'));
    await page.goto(url);
    await page.evaluate(() => localStorage.setItem('kelp.paneWidth', '470'));
    await page.reload();
    // Open the pane on a drifted NodeClaim, then fold the NodeClaim groups so that the
    // NodePools, the NodeClaim pools and the expanded pending pod fit on one screen.
    const row = page.locator('#nodeclaims tbody.group[data-pool="arm64"] tr.claim.is-drifted').first();
    const sel = await row.getAttribute('data-select');
    await row.click();
    await page.locator(`#pane-body .pane-head[data-select="${sel}"]`).waitFor();
    await page.locator('#nodeclaims tbody.group[data-pool="default"] tr.group-head').click();
    const pod = page.locator('#pending tbody.pod[data-key="ml/trainer-0"]');
    await pod.locator('.expander').click();
    await pod.locator('tr.verdicts').waitFor();
    // The top of the page: NodePools (limits, budgets, cost), the NodeClaim pools and the pane.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.move(0, 0);
    await page.evaluate(() => document.fonts.ready);
    return await page.screenshot({ path: file, type: 'png' });
  } finally {
    await context.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = path.resolve(process.argv[2] || path.join(ROOT, 'docs', 'dashboard.png'));
  const browser = await launchBrowser();
  const kelp = await startDemo();
  try {
    const png = await dashboardScreenshot(browser, kelp.url, file);
    console.log(`wrote ${path.relative(process.cwd(), file)} (${WIDTH}x${HEIGHT}, ${Math.round(png.length / 1024)} KB)`);
  } finally {
    await browser.close();
    await kelp.stop();
  }
}
