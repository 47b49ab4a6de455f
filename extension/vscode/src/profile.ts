/**
 * Profile this script / this cell / with several processes: `workspace/executeCommand
 * torchtriage.profile` with a progress notification fed by the server's `$/progress`
 * and a Cancel button that cancels the request (the server then kills the run).
 * Refused, with the reason, in an untrusted workspace: profiling runs the user's code.
 */
import * as vscode from "vscode";
import { Annotations, ProfileReportPayload } from "./annotations";
import { DEFAULT_PROCESSES, ProfileTarget, parseWhole, processCountError, profileArgument } from "./pure/ranks";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { errorText, executeWithProgress, wasCancelled } from "./serverCommand";

export const UNTRUSTED_MESSAGE =
  "torchtriage: profiling runs your code, so it is disabled in an untrusted workspace (linting still works). Trust the workspace to profile.";

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
    const payload = await this.run(notebook.uri, name, "notebook", upTo ? { cell: upTo.document.uri.toString() } : {});
    if (payload) {
      const which = upTo ? `its code cells up to cell ${upTo.index + 1}` : "all its code cells";
      void vscode.window.showInformationMessage(
        `torchtriage: profiled ${name} in a background process through the language server (${which}, run as one script) — not in the live kernel.`,
      );
    }
  }

  /**
   * Profile with several processes: asks for the processes per node (default 2) and the rank to
   * annotate, then runs the script under torchrun (`torchtriage.profile {uri, nprocPerNode, rank}`).
   */
  async profileScriptWithProcesses(target?: vscode.Uri): Promise<void> {
    if (!Profiler.allowed()) return;
    const uri = target ?? vscode.window.activeTextEditor?.document.uri;
    if (!uri || !uri.fsPath.endsWith(".py")) {
      void vscode.window.showErrorMessage("torchtriage: open a Python script (.py) to profile it with several processes.");
      return;
    }
    const name = vscode.workspace.asRelativePath(uri);
    const processes = await vscode.window.showInputBox({
      title: `torchtriage: profile ${name} under torchrun`,
      prompt: "Processes per node (torchrun --nproc-per-node); the script sets up its own process group (gloo, NCCL)",
      value: String(DEFAULT_PROCESSES),
      validateInput: processCountError,
    });
    if (processes === undefined) return;
    const nprocPerNode = parseWhole(processes);
    let rank = 0;
    if (nprocPerNode > 1) {
      const picked = await vscode.window.showQuickPick(
        Array.from({ length: nprocPerNode }, (_, k) => ({ label: `rank ${k}`, description: k === 0 ? "the default" : undefined, rank: k })),
        { title: `torchtriage: the rank whose lines are annotated (of ${nprocPerNode})`, placeHolder: "Every rank's report is kept; the others open with \"Show another rank…\"" },
      );
      if (!picked) return;
      rank = picked.rank;
    }
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.isDirty) await document.save();
    await this.run(uri, name, `script, ${nprocPerNode} processes, rank ${rank} annotated`, { nprocPerNode, rank });
  }

  private async run(uri: vscode.Uri, name: string, what: string, target: ProfileTarget = {}): Promise<ProfileReportPayload | undefined> {
    const client = await this.server.runningFor("nothing can be profiled");
    if (!client) return undefined;
    const key = uri.toString();
    if (this.running.has(key)) {
      void vscode.window.showInformationMessage(`torchtriage: ${name} is already being profiled.`);
      return undefined;
    }
    this.running.add(key);
    this.log.info(`profiling ${uri.fsPath} (${what})`);
    const title = target.nprocPerNode ? `torchtriage: profiling ${name} (${target.nprocPerNode} processes)` : `torchtriage: profiling ${name}`;
    try {
      const payload = await executeWithProgress<ProfileReportPayload>(client, "torchtriage.profile", profileArgument(uri.toString(), target), title);
      if (!payload) return undefined;
      await this.annotations.onReport(payload);
      if (payload.htmlPath) await this.reportView.show(payload.htmlPath);
      if (payload.comparison) void vscode.window.showInformationMessage(`torchtriage: since the previous profile of ${name}: ${payload.comparison.verdict}`);
      return payload;
    } catch (error) {
      if (wasCancelled(error)) {
        this.log.info(`profile of ${name} cancelled`);
        void vscode.window.showInformationMessage(`torchtriage: profile of ${name} cancelled; the run was stopped.`);
      } else {
        // The server has already shown the run's own error (its exit code and last output lines).
        this.log.error(`profile of ${name} failed: ${errorText(error)}`);
      }
      return undefined;
    } finally {
      this.running.delete(key);
    }
  }
}
