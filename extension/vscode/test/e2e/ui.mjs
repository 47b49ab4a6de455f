// Small Playwright helpers for the VS Code workbench (selectors scoped to .part.editor, see editors.md).

export async function ready(page) {
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: 90_000 });
}

/** Scrolls to a line (editors render only visible lines) and waits for a squiggle. */
export async function squiggleAt(page, line, timeout = 60_000) {
  await goTo(page, line, 1);
  await waitFor(page, ".part.editor .monaco-editor .squiggly-warning, .part.editor .monaco-editor .squiggly-error", timeout);
}

export async function waitFor(page, selector, timeout = 30_000) {
  await page.locator(selector).first().waitFor({ timeout });
}

/** Opens a file by clicking it in the Explorer (Ctrl+P is unreliable in code-server). */
export async function openFile(page, name) {
  const tab = page.locator(".part.editor .tab", { hasText: name }).first();
  if (await tab.count()) {
    await tab.click();
  } else {
    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click();
    await tab.waitFor({ timeout: 30_000 });
  }
  await page.waitForTimeout(300);
  if (!name.endsWith(".ipynb")) await page.locator(".part.editor .monaco-editor textarea").first().focus();
}

export async function command(page, label) {
  const widget = page.locator(".quick-input-widget");
  const input = page.locator(".quick-input-widget input");
  for (let attempt = 1; ; attempt++) {
    // A palette still closing from the command before stays visible but inert: wait until it is gone.
    await widget.waitFor({ state: "hidden", timeout: 5_000 }).catch(() => undefined);
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ timeout: 10_000 });
      await input.fill(`>${label}`, { timeout: 10_000 });
      break;
    } catch (error) {
      // One opened while another quick input was closing (a file picker, on a loaded machine) can stay inert
      // or vanish: close it and open the palette again.
      if (attempt >= 3) throw error;
      await page.keyboard.press("Escape");
    }
  }
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first();
  await row.waitFor({ timeout: 10_000 });
  await page.keyboard.press("Enter");
}

export async function goTo(page, line, column) {
  await page.keyboard.press("Control+g");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press("Enter");
  await page.waitForTimeout(300);
}

export async function editorText(page) {
  return (await page.locator(".part.editor .monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
}

export async function waitForText(page, text, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if ((await editorText(page)).includes(text)) return;
    await page.waitForTimeout(300);
  }
  throw new Error(`"${text}" never appeared in the editor`);
}

/** The Problems panel's entries (text of each row), once at least `atLeast` markers show. */
export async function problems(page, atLeast, wanted = /TT\d{3}/) {
  // Waits for `atLeast` rows matching `wanted` (a file's own codes: rows of files closed just before can
  // still be listed while the newly opened file's diagnostics have not arrived).
  await command(page, "View: Focus Problems");
  const rows = page.locator(".markers-panel .monaco-list-row");
  const deadline = Date.now() + 30_000;
  let texts = [];
  while (Date.now() < deadline) {
    texts = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " "));
    if (texts.filter((t) => wanted.test(t)).length >= atLeast) break;
    await page.waitForTimeout(500);
  }
  await page.waitForTimeout(1500); // duplicates, if any, would arrive now
  texts = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, " "));
  return texts.filter((t) => /TT\d{3}/.test(t));
}

/** Texts of after-line decorations (rendered as CSS ::after content). */
export async function afterLineLabels(page) {
  return page.evaluate(() => {
    const labels = [];
    for (const sheet of Array.from(document.styleSheets)) {
      let rules;
      try {
        rules = Array.from(sheet.cssRules);
      } catch {
        continue;
      }
      for (const rule of rules) {
        const match = /content:\s*"([^"]*ms\/step[^"]*)"/.exec(rule.cssText);
        if (match) labels.push(match[1].replace(/\\b7 ?/g, "·").replace(/\\00b7 ?/g, "·"));
      }
    }
    return labels;
  });
}

/** The after-line label (CSS ::after content) drawn on the editor line whose text includes `lineText`, or undefined. */
export async function afterLineLabelOn(page, lineText) {
  return page.evaluate((wanted) => {
    const line = Array.from(document.querySelectorAll(".part.editor .monaco-editor .view-line")).find((l) =>
      (l.textContent ?? "").replace(/\u00a0/g, " ").includes(wanted),
    );
    if (!line) return undefined;
    const classes = new Set(Array.from(line.querySelectorAll("span")).flatMap((span) => Array.from(span.classList)));
    for (const sheet of Array.from(document.styleSheets)) {
      let rules;
      try {
        rules = Array.from(sheet.cssRules);
      } catch {
        continue;
      }
      for (const rule of rules) {
        const selector = rule.selectorText ?? "";
        if (!/::?after/.test(selector) || ![...classes].some((c) => selector.includes(`.${c}`))) continue;
        const match = /content:\s*"([^"]*)"/.exec(rule.cssText);
        if (match) return match[1].replace(/\\b7 ?/g, "·").replace(/\\00b7 ?/g, "·");
      }
    }
    return undefined;
  }, lineText);
}

/** The text of the webview whose document includes `text` (webviews are nested iframes), or undefined. */
export async function webviewText(page, text) {
  for (const frame of page.frames()) {
    const body = await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "");
    if (body.includes(text)) return body;
  }
  return undefined;
}

/** Hides the bottom panel and the secondary side bar (for a clean screenshot). */
export async function hidePanels(page) {
  if (await page.locator(".part.panel").first().isVisible().catch(() => false)) await page.keyboard.press("Control+j");
  if (await page.locator(".part.auxiliarybar").first().isVisible().catch(() => false)) await page.keyboard.press("Control+Alt+b");
  await page.waitForTimeout(500);
}
