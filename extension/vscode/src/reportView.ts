/** report.html or lab.html (the runtime's self-contained reports with charts) in a webview panel. */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

export class ReportView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  /** Shows `htmlPath` in the panel, titled `title` (default: `torchtriage report — <run folder>`). */
  async show(htmlPath: string, title?: string): Promise<void> {
    let html: string;
    try {
      html = await fs.readFile(htmlPath, "utf-8");
    } catch (error) {
      void vscode.window.showErrorMessage(`torchtriage: cannot open the report ${htmlPath}: ${String(error)}`);
      return;
    }
    const folder = vscode.Uri.file(path.dirname(htmlPath));
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("torchtriage.report", "torchtriage report", vscode.ViewColumn.Beside, {
        enableScripts: true,
        enableFindWidget: true,
        retainContextWhenHidden: true,
        localResourceRoots: [folder],
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.webview.options = { ...this.panel.webview.options, localResourceRoots: [folder] };
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    const base = `<base href="${this.panel.webview.asWebviewUri(folder).toString()}/">`;
    this.panel.title = title ?? `torchtriage report — ${path.basename(path.dirname(htmlPath))}`;
    this.panel.webview.html = /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (head) => head + base) : base + html;
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
