// End-to-end in a real JupyterLab + jupyterlab-lsp, headless Chromium (playwright-core, /usr/bin/chromium).
// Env: LAB_URL (with base path), LAB_TOKEN, NOTEBOOK (path relative to the server root), OUT (screenshots).
// Prints one JSON line with what it saw; exits 1 (with OUT/failure.png) when a step fails.
import { join } from 'node:path';
import { openBrowser, stepper } from './browser.mjs';

const { LAB_URL, LAB_TOKEN, NOTEBOOK, OUT } = process.env;
// jupyterlab-lsp draws diagnostics as CodeMirror lint ranges; beside another Python server, our own client
// draws them as .tt-diagnostic marks.
const DIAGNOSTIC = process.env.DIAGNOSTIC || '.cm-lintRange';
const ONLY_DIAGNOSTICS = process.env.ONLY_DIAGNOSTICS === '1';
const STEP_MS = Number(process.env.STEP_MS || 90000);
const seen = {};

const { browser, page } = await openBrowser(STEP_MS);
const step = stepper(browser, page, seen, OUT);
const cells = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');

await step('opened', async () => {
  await page.goto(`${LAB_URL}lab/tree/${NOTEBOOK}?token=${LAB_TOKEN}`);
  await cells.nth(2).waitFor();
  await page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first().waitFor().catch(() => {});
});

await step('diagnostics_in_loop_cell', async () => {
  // TT102/TT201 are in the loop (cell 2).
  await cells.nth(2).locator(DIAGNOSTIC).first().waitFor();
  seen.lint_ranges_cell1 = await cells.nth(1).locator(DIAGNOSTIC).count();
  seen.lint_ranges_cell2 = await cells.nth(2).locator(DIAGNOSTIC).count();
  seen.titles = await cells.nth(2).locator(DIAGNOSTIC).evaluateAll(els => els.map(e => e.getAttribute('title') || ''));
});

if (ONLY_DIAGNOSTICS) {
  // Beside another server: our quick fix command on the `history.append(loss)` line (TT201).
  await step('quick_fix', async () => {
    await cells.nth(2).locator('.cm-line', { hasText: 'history.append(loss)' }).click();
    await page.keyboard.press('Control+Shift+c');
    const search = page.locator('.lm-CommandPalette-input');
    await search.waitFor();
    await search.fill('torchtriage quick fix');
    await page.locator('.lm-CommandPalette-item', { hasText: 'Apply torchtriage quick fix' }).first().click();
    await cells.nth(2).locator('.cm-line', { hasText: 'history.append(loss.detach())' }).waitFor({ timeout: 30000 });
    seen.fixed_line = await cells.nth(2).locator('.cm-line', { hasText: 'history.append(' }).innerText();
  });
  await page.screenshot({ path: join(OUT, 'diagnostics.png') });
  console.log(JSON.stringify(seen));
  await browser.close();
  process.exit(0);
}

await step('diagnostic_message', async () => {
  await cells.nth(2).locator(DIAGNOSTIC).first().hover();
  const tooltip = page.locator('.cm-tooltip-lint, .cm-diagnostic').first();
  await tooltip.waitFor({ timeout: 15000 });
  seen.tooltip = (await tooltip.innerText()).slice(0, 300);
});

await step('ran_setup_cell', async () => {
  await cells.nth(1).locator('.jp-InputArea-editor').click();
  await page.keyboard.press('Shift+Enter');
  await cells.nth(1).locator('.jp-InputArea-prompt', { hasText: /\[\d+\]/ }).waitFor();
});

await step('profiled', async () => {
  await cells.nth(2).locator('.jp-InputArea-editor').click();
  await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .tt-profile-button').click();
  await cells.nth(2).locator('.jp-torchtriage-profile .tt-verdict').waitFor();
  seen.verdict = await cells.nth(2).locator('.jp-torchtriage-profile .tt-verdict').innerText();
});

await step('annotations', async () => {
  await cells.nth(2).locator('.tt-hot-label').first().waitFor();
  seen.labels = await cells.nth(2).locator('.tt-hot-label').allInnerTexts();
  seen.hot_lines = await cells.nth(2).locator('.cm-line.tt-hot-line').allInnerTexts();
});

await step('runs_panel', async () => {
  await page.locator('.jp-SideBar [data-id="torchtriage-runs"], .jp-SideBar li[title*="torchtriage"]').first().click();
  await page.locator('#torchtriage-runs .tt-run').first().waitFor();
  seen.runs = await page.locator('#torchtriage-runs .tt-run-verdict').allInnerTexts();
  const href = await page.locator('#torchtriage-runs .tt-run-report').first().getAttribute('href');
  const response = await page.request.get(new URL(href, page.url()).toString());
  seen.report_html = response.status() === 200 && (await response.text()).includes('<svg');
});

await cells.nth(2).scrollIntoViewIfNeeded();
await page.screenshot({ path: join(OUT, 'notebook.png') });
console.log(JSON.stringify(seen));
await browser.close();
