// End-to-end in a real JupyterLab, headless Chromium (playwright-core, /usr/bin/chromium): a torch.profiler trace
// opened from the file browser shows as a torchtriage report.
// Env: LAB_URL (with base path), LAB_TOKEN, FOLDER (the trace's folder, relative to the root, `/`-separated),
// TRACE (its file name), PLAIN (a copy named *.json, opened with "Open With → torchtriage report"),
// BAD (a file that is not a trace), OUT (screenshots); RANKS (a subfolder of FOLDER holding a trace per rank) and EMPTY
// (a subfolder without traces), each opened with the folder context menu's "Open as torchtriage trace report".
// Prints one JSON line with what it saw; exits 1 (with OUT/failure.png) when a step fails.
import { join } from 'node:path';
import { openBrowser, stepper } from './browser.mjs';

const { LAB_URL, LAB_TOKEN, FOLDER, TRACE, PLAIN, BAD, OUT, RANKS, EMPTY } = process.env;
const STEP_MS = Number(process.env.STEP_MS || 90000);
const seen = { contents_requests: [] };

const { browser, page } = await openBrowser(STEP_MS);
const step = stepper(browser, page, seen, OUT);
// What the browser asks the contents API about the trace: never its content (traces are often GBs).
page.on('request', request => {
  const url = request.url();
  if (url.includes('/api/contents/') && url.includes(encodeURIComponent(TRACE).replace(/%2F/g, '/'))) {
    seen.contents_requests.push(url.replace(/^.*\/api\/contents\//, ''));
  }
});

const items = page.locator('.jp-DirListing-content .jp-DirListing-item');
const item = name => items.filter({ has: page.locator('.jp-DirListing-itemText', { hasText: new RegExp(`^${name.replace(/\./g, '\\.')}$`) }) }).first();
const reports = page.locator('.jp-torchtriage-trace');

await step('opened', async () => {
  await page.goto(`${LAB_URL}lab?token=${LAB_TOKEN}`);
  await items.first().waitFor();
});

await step('folder', async () => {
  for (const part of FOLDER.split('/')) {
    await item(part).dblclick();
    await page.locator('.jp-BreadCrumbs', { hasText: part }).first().waitFor();
  }
  await item(TRACE).waitFor();
});

await step('trace_report', async () => {
  await item(TRACE).dblclick();
  const verdict = reports.first().locator('.tt-trace-verdict');
  await verdict.waitFor({ timeout: 180000 });
  seen.verdict = await verdict.innerText();
  seen.hot_lines = await reports.first().locator('.tt-trace-lines').innerText().catch(() => '');
  seen.run = await reports.first().locator('.tt-trace-run').innerText();
  seen.tab = await page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current').first().innerText();
  const body = reports.first().frameLocator('iframe.tt-trace-report').locator('body');
  await body.filter({ hasText: 'of step time' }).waitFor({ timeout: 60000 });
  seen.report_html = (await body.innerText()).replace(/\s+/g, ' ').slice(0, 400);
});
await page.screenshot({ path: join(OUT, 'trace.png') });

await step('open_with', async () => {
  await item(PLAIN).click({ button: 'right' });
  await page.locator('.lm-Menu-item', { hasText: /^Open With/ }).first().hover();
  await page.locator('.lm-Menu-item', { hasText: 'torchtriage report' }).first().click();
  await page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: PLAIN }).first().waitFor();
  const verdict = reports.nth(1).locator('.tt-trace-verdict');
  await verdict.waitFor({ timeout: 180000 });
  seen.open_with_verdict = await verdict.innerText();
});

await step('bad_trace', async () => {
  await item(BAD).dblclick();
  const error = reports.nth(2).locator('.tt-trace-error');
  await error.waitFor({ timeout: 60000 });
  seen.bad = (await error.innerText()).replace(/\s+/g, ' ');
});

const FOLDER_COMMAND = 'Open as torchtriage trace report';
const menuItem = label => page.locator('.lm-Menu-item:visible', { hasText: label });

await step('folder_command_only_on_folders', async () => {
  await item(TRACE).click({ button: 'right' });
  await menuItem(/^Open With/).first().waitFor();
  seen.file_menu_has_folder_command = (await menuItem(FOLDER_COMMAND).count()) > 0;
  await page.keyboard.press('Escape');
});

await step('folder_report', async () => {
  await item(RANKS).click({ button: 'right' });
  await menuItem(FOLDER_COMMAND).first().click();
  const report = reports.nth(3);
  await report.locator('.tt-trace-workers').waitFor({ timeout: 180000 });
  seen.folder_verdict = await report.locator('.tt-trace-verdict').innerText();
  seen.folder_workers = await report.locator('.tt-trace-workers').innerText();
  seen.folder_run = await report.locator('.tt-trace-run').innerText();
  seen.folder_tab = await page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current').first().innerText();
  const body = report.frameLocator('iframe.tt-trace-report').locator('body');
  await body.filter({ hasText: 'Ranks (2 in the traces' }).waitFor({ timeout: 60000 });
  seen.folder_html_has_ranks = (await body.innerText()).includes('Ranks (2 in the traces');
  await report.locator('.tt-trace-worker', { hasText: /^1$/ }).click();
  await page.waitForFunction(() => {
    const frames = document.querySelectorAll('.jp-torchtriage-trace iframe.tt-trace-report');
    return frames.length > 3 && frames[3].src.includes('rank1');
  });
  seen.rank1_src = decodeURIComponent((await report.locator('iframe.tt-trace-report').getAttribute('src')) ?? '');
  await body.filter({ hasText: 'of step time' }).waitFor({ timeout: 60000 });
  seen.rank1_has_ranks_section = (await body.innerText()).includes('Ranks (2 in the traces');
});
await page.screenshot({ path: join(OUT, 'folder.png') });

await step('empty_folder', async () => {
  await item(EMPTY).click({ button: 'right' });
  await menuItem(FOLDER_COMMAND).first().click();
  const error = reports.nth(4).locator('.tt-trace-error');
  await error.waitFor({ timeout: 60000 });
  seen.empty = (await error.innerText()).replace(/\s+/g, ' ');
});

console.log(JSON.stringify(seen));
await browser.close();
