/**
 * Run the lab: `workspace/executeCommand torchtriage.lab` on the active script
 * (fp32 / bf16 / bf16 + compile, each a background run of the unmodified script)
 * behind a cancellable progress notification; then lab.html in the report
 * webview, the verdict as a message and every row in the output channel.
 * Refused in an untrusted workspace, like profiling: it runs the user's code.
 */
import * as vscode from "vscode";
import { Profiler } from "./profile";
import { LabReportPayload, labLogLines, labMessage } from "./pure/lab";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { errorText, executeWithProgress, wasCancelled } from "./serverCommand";

export class Lab {
  private running = new Set<string>();

  constructor(
    private readonly server: ServerManager,
    private readonly reportView: ReportView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async run(target?: vscode.Uri): Promise<LabReportPayload | undefined> {
    if (!Profiler.allowed()) return undefined;
    const active = vscode.window.activeTextEditor?.document.uri;
    // A notebook cell's editor stands for its notebook: the server runs the notebook's code cells joined.
    const uri = target ?? (active && active.scheme !== "vscode-notebook-cell" ? active : vscode.window.activeNotebookEditor?.notebook.uri);
    if (!uri || !(uri.fsPath.endsWith(".py") || uri.fsPath.endsWith(".ipynb"))) {
      void vscode.window.showErrorMessage("torchtriage: open a Python script (.py) or a notebook to run the lab on it.");
      return undefined;
    }
    const client = await this.server.runningFor("the lab cannot run");
    if (!client) return undefined;
    const name = vscode.workspace.asRelativePath(uri);
    if (uri.fsPath.endsWith(".py")) {
      const document = await vscode.workspace.openTextDocument(uri); // the server runs open documents
      if (document.isDirty) await document.save(); // the lab runs the file on disk
    }
    const key = uri.toString();
    if (this.running.has(key)) {
      void vscode.window.showInformationMessage(`torchtriage: the lab is already running on ${name}.`);
      return undefined;
    }
    this.running.add(key);
    this.log.info(`lab on ${uri.fsPath} (fp32 / bf16 / bf16+compile)`);
    try {
      const payload = await executeWithProgress<LabReportPayload>(client, "torchtriage.lab", uri.toString(), `torchtriage: lab on ${name} (fp32 / bf16 / compile)`);
      if (!payload) return undefined;
      this.log.info(`lab ${payload.labPath}:\n${labLogLines(payload).map((line) => `  ${line}`).join("\n")}`);
      if (payload.htmlPath) await this.reportView.show(payload.htmlPath, `torchtriage lab — ${uri.path.split("/").pop()}`);
      const output = "Show rows in output";
      void vscode.window.showInformationMessage(labMessage(payload, name), output).then((choice) => {
        if (choice === output) this.log.show(true);
      });
      return payload;
    } catch (error) {
      if (wasCancelled(error)) {
        this.log.info(`lab on ${name} cancelled`);
        void vscode.window.showInformationMessage(`torchtriage: lab on ${name} cancelled; the run in progress was stopped and nothing more runs.`);
      } else {
        // The server has already shown the lab's own error (its exit code and last output lines).
        this.log.error(`lab on ${name} failed: ${errorText(error)}`);
      }
      return undefined;
    } finally {
      this.running.delete(key);
    }
  }
}
