/**
 * Show another rank…: after a multi-process profile of a script, redraw the
 * annotations from another rank's own report.json and open its report.html.  The
 * combined report's `ranks.per_rank` names each rank's files, so no server
 * command is needed; the server's own profile diagnostics stay those of the rank
 * it annotated.  Notebooks are refused: their cell mapping lives in the server.
 */
import * as vscode from "vscode";
import { Annotations } from "./annotations";
import { rankChoices } from "./pure/ranks";
import { ReportView } from "./reportView";

export async function showAnotherRank(annotations: Annotations, reportView: ReportView): Promise<void> {
  const run = annotations.run;
  if (!run || (run.payload.ranks?.length ?? 0) < 2) {
    void vscode.window.showInformationMessage('torchtriage: no multi-process profile in this window. Run "torchtriage: Profile with several processes (torchrun)…" first.');
    return;
  }
  const uri = vscode.Uri.parse(run.payload.uri);
  if (uri.scheme !== "file" || !uri.fsPath.endsWith(".py")) {
    void vscode.window.showInformationMessage("torchtriage: another rank can be drawn on a .py script only (a notebook's lines are mapped to cells by the server, for the annotated rank).");
    return;
  }
  const choices = rankChoices(run.report.ranks, annotations.last?.payload.rank ?? run.payload.rank);
  const picked = await vscode.window.showQuickPick(
    choices.map((choice) => ({ label: choice.label, description: choice.description, choice })),
    { title: `torchtriage: rank to draw on ${uri.path.split("/").pop()}` },
  );
  if (!picked) return;
  if (!(await annotations.showRank(picked.choice))) {
    void vscode.window.showErrorMessage(`torchtriage: rank ${picked.choice.rank} left no readable report.json in this run.`);
    return;
  }
  const html = annotations.last?.payload.htmlPath;
  if (html) await reportView.show(html, `torchtriage report — rank ${picked.choice.rank}`);
}
