/**
 * Open a trace…: a torch.profiler trace recorded elsewhere (a chrome trace `.json` / `.json.gz` /
 * `.pt.trace.json(.gz)`, or a `tensorboard_trace_handler` folder from the explorer's context menu)
 * analysed by the language server (`torchtriage.analyze`, behind a cancellable progress notification),
 * then its report in the webview and its hot lines drawn on the local files it names (the hottest one
 * opened at its hottest line).  Nothing of the user's runs: allowed in an untrusted workspace too.
 */
import * as vscode from "vscode";
import { Annotations, ProfileReportPayload } from "./annotations";
import { TRACE_FILTERS, analyzeArgument, traceMessage, traceName } from "./pure/trace";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { errorText, executeWithProgress, wasCancelled } from "./serverCommand";

export class TraceOpener {
  private running = new Set<string>();

  constructor(
    private readonly server: ServerManager,
    private readonly annotations: Annotations,
    private readonly reportView: ReportView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The trace `target` (the explorer's file or folder), else the one picked in the open dialog. */
  async open(target?: vscode.Uri): Promise<ProfileReportPayload | undefined> {
    const uri = target ?? (await this.pick());
    if (!uri) return undefined;
    if (uri.scheme !== "file") {
      void vscode.window.showErrorMessage("torchtriage: the trace must be a file on this machine.");
      return undefined;
    }
    const client = await this.server.runningFor("the trace cannot be analysed");
    if (!client) return undefined;
    const name = traceName(uri.fsPath);
    const key = uri.toString();
    if (this.running.has(key)) {
      void vscode.window.showInformationMessage(`torchtriage: the trace ${name} is already being analysed.`);
      return undefined;
    }
    this.running.add(key);
    this.log.info(`analysing the trace ${uri.fsPath}`);
    try {
      const payload = await executeWithProgress<ProfileReportPayload>(client, "torchtriage.analyze", analyzeArgument(uri.fsPath), `torchtriage: analysing the trace ${name}`);
      if (!payload) return undefined;
      await this.annotations.onReport(payload);
      const files = (payload.files ?? []).map((file) => vscode.Uri.parse(file));
      const top = payload.hotLines?.find((line) => line.uri === payload.files?.[0]);
      if (files.length > 0) {
        // The hottest file at its hottest line (its annotations drawn), then the report beside it.
        const line = Math.max(0, (top?.line ?? 1) - 1);
        await vscode.window.showTextDocument(files[0], { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(line, 0, line, 0), preview: false });
      }
      if (payload.htmlPath) await this.reportView.show(payload.htmlPath, `torchtriage report — trace ${name}`);
      const message = traceMessage(name, payload.summary, files.map((file) => vscode.workspace.asRelativePath(file)));
      this.log.info(message);
      void vscode.window.showInformationMessage(message);
      return payload;
    } catch (error) {
      if (wasCancelled(error)) {
        this.log.info(`analysis of ${name} cancelled`);
        void vscode.window.showInformationMessage(`torchtriage: analysis of the trace ${name} cancelled.`);
      } else {
        // The server has already shown the CLI's own message (why the trace cannot be used).
        this.log.error(`analysis of the trace ${name} failed: ${errorText(error)}`);
      }
      return undefined;
    } finally {
      this.running.delete(key);
    }
  }

  private async pick(): Promise<vscode.Uri | undefined> {
    const chosen = await vscode.window.showOpenDialog({
      title: "torchtriage: open a trace recorded with torch.profiler",
      openLabel: "Analyse",
      canSelectFiles: true,
      // A native dialog selects files or folders on Windows and Linux, not both: a tensorboard_trace_handler
      // folder is opened from the explorer's context menu there.
      canSelectFolders: process.platform === "darwin",
      canSelectMany: false,
      filters: TRACE_FILTERS,
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    return chosen?.[0];
  }
}
