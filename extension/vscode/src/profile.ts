/**
 * Profile this script / this cell: `workspace/executeCommand torchtriage.profile`
 * with a progress notification fed by the server's `$/progress` and a Cancel
 * button that cancels the request (the server then kills the run).  Refused, with
 * the reason, in an untrusted workspace: profiling runs the user's code.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, ResponseError, WorkDoneProgress } from "vscode-languageclient/node";
import { Annotations, ProfileReportPayload } from "./annotations";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";

export const UNTRUSTED_MESSAGE =
  "torchtriage: profiling runs your code, so it is disabled in an untrusted workspace (linting still works). Trust the workspace to profile.";

let nextToken = 0;

export class Profiler {
  private running = new Set<string>();

  constructor(
    private readonly server: ServerManager,
    private readonly annotations: Annotations,
    private readonly reportView: ReportView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** False (and says why) when the workspace is not trusted. */
  static allowed(): boolean {
    if (vscode.workspace.isTrusted) return true;
    const manage = "Manage Workspace Trust";
    void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE, manage).then((choice) => {
      if (choice === manage) void vscode.commands.executeCommand("workbench.trust.manage");
    });
    return false;
  }

  async profileScript(target?: vscode.Uri): Promise<void> {
    if (!Profiler.allowed()) return;
    const uri = target ?? vscode.window.activeTextEditor?.document.uri;
    if (!uri || !uri.fsPath.endsWith(".py")) {
      void vscode.window.showErrorMessage("torchtriage: open a Python script (.py) to profile it.");
      return;
    }
    const document = await vscode.workspace.openTextDocument(uri); // the server profiles open documents
    if (document.isDirty) await document.save(); // the run uses the file on disk
    await this.run(uri, vscode.workspace.asRelativePath(uri), "script");
  }

  async profileCell(cell?: vscode.NotebookCell | { notebookEditor?: { notebookUri: vscode.Uri } }): Promise<void> {
    if (!Profiler.allowed()) return;
    const notebook =
      cell && "notebook" in cell ? cell.notebook : vscode.window.activeNotebookEditor?.notebook;
    if (!notebook) {
      void vscode.window.showErrorMessage("torchtriage: open a notebook to profile a cell.");
      return;
    }
    const name = vscode.workspace.asRelativePath(notebook.uri);
    // From the cell toolbar: that cell; from the palette: the notebook editor's selected cell.
    const editor = vscode.window.activeNotebookEditor;
    const selected = editor && editor.notebook === notebook && editor.selection ? notebook.cellAt(editor.selection.start) : undefined;
    const upTo = cell && "document" in cell ? cell : selected?.kind === vscode.NotebookCellKind.Code ? selected : undefined;
    const payload = await this.run(notebook.uri, name, "notebook", upTo?.document.uri.toString());
    if (payload) {
      const which = upTo ? `its code cells up to cell ${upTo.index + 1}` : "all its code cells";
      void vscode.window.showInformationMessage(
        `torchtriage: profiled ${name} in a background process through the language server (${which}, run as one script) — not in the live kernel.`,
      );
    }
  }

  private async run(uri: vscode.Uri, name: string, what: "script" | "notebook", cell?: string): Promise<ProfileReportPayload | undefined> {
    const client = this.server.client;
    if (!client?.isRunning()) {
      const choice = await vscode.window.showErrorMessage("torchtriage: the language server is not running, so nothing can be profiled.", "Show output");
      if (choice) this.log.show();
      return undefined;
    }
    const key = uri.toString();
    if (this.running.has(key)) {
      void vscode.window.showInformationMessage(`torchtriage: ${name} is already being profiled.`);
      return undefined;
    }
    this.running.add(key);
    const token = `torchtriage-profile-${process.pid}-${nextToken++}`;
    this.log.info(`profiling ${uri.fsPath} (${what})`);
    try {
      const payload = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `torchtriage: profiling ${name}`, cancellable: true },
        async (progress, cancel) => {
          let last = 0;
          const listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
            if (value.kind === "end") return;
            const increment = value.percentage !== undefined ? Math.max(0, value.percentage - last) : undefined;
            if (value.percentage !== undefined) last = value.percentage;
            progress.report({ message: value.message, increment });
          });
          try {
            return (await client.sendRequest(
              ExecuteCommandRequest.type,
              { command: "torchtriage.profile", arguments: [cell ? { uri: uri.toString(), cell } : uri.toString()], workDoneToken: token },
              cancel,
            )) as ProfileReportPayload;
          } finally {
            listener.dispose();
          }
        },
      );
      if (!payload) return undefined;
      await this.annotations.onReport(payload);
      if (payload.htmlPath) await this.reportView.show(payload.htmlPath);
      return payload;
    } catch (error) {
      if (error instanceof ResponseError && (error.code === -32800 || /cancel/i.test(error.message))) {
        this.log.info(`profile of ${name} cancelled`);
        void vscode.window.showInformationMessage(`torchtriage: profile of ${name} cancelled; the run was stopped.`);
      } else {
        // The server has already shown the run's own error (its exit code and last output lines).
        this.log.error(`profile of ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      return undefined;
    } finally {
      this.running.delete(key);
    }
  }
}
