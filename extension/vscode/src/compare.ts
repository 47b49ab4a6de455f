/**
 * Compare with the previous run: `torchtriage.compare {uri, baseline: "last"}` for
 * the active document (its last profile against the one before it; the server
 * writes compare.json and the "Compared with" section into the newer run), then
 * the verdict as a message, the newer report.html in the webview, and the line
 * changes on the drawn hot lines when that run is the one drawn.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import { Annotations } from "./annotations";
import { CompareDocument, compareArguments, compareMessage, newerReportHtml } from "./pure/compare";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { errorText } from "./serverCommand";

const PROFILE = "Profile this script";

/** The active document to compare: a .py file, or a notebook (from its editor or one of its cells). */
function activeDocument(): vscode.Uri | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active && active.scheme !== "vscode-notebook-cell") return active;
  return vscode.window.activeNotebookEditor?.notebook.uri;
}

export async function compareWithPrevious(server: ServerManager, annotations: Annotations, reportView: ReportView, log: vscode.LogOutputChannel): Promise<CompareDocument | undefined> {
  const uri = activeDocument();
  if (!uri || !(uri.fsPath.endsWith(".py") || uri.fsPath.endsWith(".ipynb"))) {
    void vscode.window.showErrorMessage("torchtriage: open a profiled Python script (.py) or notebook to compare its runs.");
    return undefined;
  }
  const client = await server.whenRunning();
  if (!client) {
    void vscode.window.showErrorMessage("torchtriage: the language server is not running, so nothing can be compared.");
    return undefined;
  }
  const name = vscode.workspace.asRelativePath(uri);
  let document: CompareDocument;
  try {
    document = (await client.sendRequest(ExecuteCommandRequest.type, { command: "torchtriage.compare", arguments: compareArguments(uri.toString()) })) as CompareDocument;
  } catch (error) {
    // The server says why (not profiled in this session, no earlier run beside it, a run that failed …).
    log.warn(`compare ${name}: ${errorText(error)}`);
    const offer = uri.fsPath.endsWith(".py") && /not been profiled|no (earlier|previous)/i.test(errorText(error)) ? [PROFILE] : [];
    const choice = await vscode.window.showErrorMessage(`torchtriage: cannot compare ${name}: ${errorText(error)}`, ...offer);
    if (choice === PROFILE) await vscode.commands.executeCommand("torchtriage.profileScript", uri);
    return undefined;
  }
  const message = compareMessage(document, name);
  log.info(`${message} (compare.json in ${document.after?.run_dir ?? "the newer run"})`);
  annotations.onComparison(document);
  const html = newerReportHtml(document);
  if (html) await reportView.show(html);
  void vscode.window.showInformationMessage(message);
  return document;
}
