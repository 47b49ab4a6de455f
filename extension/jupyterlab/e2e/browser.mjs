// What both end-to-end scripts share: headless Chromium (playwright-core, /usr/bin/chromium or $CHROMIUM) in a
// throwaway profile, and the step runner that records each step in `seen` and, on the first failure,
// saves OUT/failure.png, prints `seen` as one JSON line and exits 1.
import { chromium } from 'playwright-core';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function openBrowser(stepMs) {
  const browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'tt-chromium-')), {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync']
  });
  const page = browser.pages()[0] ?? (await browser.newPage());
  page.setDefaultTimeout(stepMs);
  return { browser, page };
}

export function stepper(browser, page, seen, out) {
  return async function step(name, fn) {
    try {
      await fn();
      seen[name] = true;
    } catch (error) {
      seen[name] = false;
      seen.error = `${name}: ${error.message.split('\n')[0]}`;
      await page.screenshot({ path: join(out, 'failure.png'), fullPage: true }).catch(() => {});
      console.log(JSON.stringify(seen));
      await browser.close();
      process.exit(1);
    }
  };
}
