/**
 * Profile results drawn in the editor, from the `torchtriage/profileReport`
 * notification: the report.json it names gives each hot line a gutter heat mark,
 * an overview-ruler mark scaled by share, an after-line label and a hover; a
 * status-bar item shows the verdict and opens the report.  Annotations move with
 * edits (pure/lineShift) and clear on request.
 *
 * Notebook runs are profiled as a joined temporary script, so report.json's paths
 * are not the cells' paths: for cells the payload's `hotLines`, which the server
 * has mapped back to cells, give the lines.
 *
 * After a re-profile the payload's `comparison` (compare.json) gives each hot line
 * its change (`12.1 ms/step (−30 ms)`); a multi-process run can be redrawn from
 * another rank's own report.json (`ranks.per_rank` of the combined report).
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { CompareDocument, ProfileComparison, isNewerRun, lineDeltas } from "./pure/compare";
import { LineDelta } from "./pure/delta";
import { HEAT_LEVELS, HotLine, PayloadHotLine, Report, Summary, heatColor, hotLinesFor, hotLinesFromPayload, verdictText, withDeltas } from "./pure/hotLines";
import { LineChange, shiftLines } from "./pure/lineShift";
import { RankChoice, RanksSection, rankSuffix } from "./pure/ranks";
import { TraceFields, traceHotLines, traceName } from "./pure/trace";

export interface ProfileReportPayload extends TraceFields {
  uri: string;
  reportPath: string;
  htmlPath: string | null;
  summary: Summary;
  hotLines?: PayloadHotLine[];
  /** Only after a re-profile: the comparison with the document's previous profile. */
  comparison?: ProfileComparison;
  /** The rank shown (multi-process runs), null for a single process. */
  rank?: number | null;
  /** The ranks profiled on this node, [] for a single process. */
  ranks?: number[];
}

export interface LastProfile {
  payload: ProfileReportPayload;
  report: Report & { ranks?: RanksSection };
  /** The run folder (trace viewers look for tb/ there): a rank's report sits one folder below it. */
  runDir: string;
}

function gutterIcon(level: number): vscode.Uri {
  const height = 4 + level * 3; // taller bar = hotter line
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect x="5" y="${16 - height}" width="6" height="${height}" rx="1" fill="${heatColor(level)}"/></svg>`;
  return vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}`);
}

export class Annotations implements vscode.Disposable {
  /** What is drawn: the run's report, or one of its ranks' (Show another rank…). */
  last: LastProfile | undefined;
  /** The run as the server reported it (its combined report for a multi-process run). */
  run: LastProfile | undefined;
  private readonly lines = new Map<string, HotLine[]>(); // document uri -> hot lines
  private traceFiles: string[] = []; // the files the last analysed trace is drawn on (replaced by the next trace)
  private readonly types: vscode.TextEditorDecorationType[];
  private readonly status: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.types = Array.from({ length: HEAT_LEVELS }, (_, level) =>
      vscode.window.createTextEditorDecorationType({
        gutterIconPath: gutterIcon(level),
        gutterIconSize: "contain",
        overviewRulerColor: heatColor(level),
        overviewRulerLane: vscode.OverviewRulerLane.Right,
        after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), margin: "0 0 0 2em", fontStyle: "italic" },
      }),
    );
    this.status = vscode.window.createStatusBarItem("torchtriage.verdict", vscode.StatusBarAlignment.Left, 50);
    this.status.name = "torchtriage profile verdict";
    this.status.command = "torchtriage.showLastReport";
    this.disposables.push(
      this.status,
      ...this.types,
      vscode.window.onDidChangeVisibleTextEditors((editors) => editors.forEach((e) => this.render(e))),
      vscode.workspace.onDidChangeTextDocument((event) => this.shift(event)),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("torchtriage.annotations.enable")) this.renderAll();
      }),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  private get enabled(): boolean {
    return vscode.workspace.getConfiguration("torchtriage").get("annotations.enable", true);
  }

  /** Whether this extension draws the profile on `uri` (then the server's inlay hints would repeat it). */
  draws(uri: vscode.Uri): boolean {
    return this.enabled && (this.lines.get(uri.toString())?.length ?? 0) > 0;
  }

  async onReport(payload: ProfileReportPayload): Promise<void> {
    let report: LastProfile["report"];
    try {
      report = JSON.parse(await fs.readFile(payload.reportPath, "utf-8")) as LastProfile["report"];
    } catch (error) {
      this.log.error(`cannot read ${payload.reportPath}: ${String(error)}`);
      return;
    }
    this.run = { payload, report, runDir: path.dirname(payload.reportPath) };
    const deltas = lineDeltas(payload.comparison?.document);
    await this.draw(this.run, deltas);
  }

  /**
   * Adds the line changes of `document` to the drawn lines of a script when it compared the drawn run with an
   * earlier one (a notebook's re-profile payload already has them: compare.json's lines are the joined script's).
   */
  onComparison(document: CompareDocument): boolean {
    const last = this.last;
    if (!last || !isNewerRun(document, last.payload.reportPath)) return false;
    const uri = vscode.Uri.parse(last.payload.uri);
    const drawn = this.lines.get(uri.toString());
    if (uri.scheme !== "file" || !drawn) return false;
    this.lines.set(uri.toString(), withDeltas(drawn, uri.fsPath, lineDeltas(document)));
    this.renderAll();
    return true;
  }

  /** Draws rank `choice` of the last multi-process run from its own report.json (a .py script only). */
  async showRank(choice: RankChoice): Promise<boolean> {
    const run = this.run;
    if (!run) return false;
    if (choice.rank === run.payload.rank) {
      await this.draw(run, lineDeltas(run.payload.comparison?.document));
      return true;
    }
    if (!choice.report) return false;
    let report: LastProfile["report"];
    try {
      report = JSON.parse(await fs.readFile(choice.report, "utf-8")) as LastProfile["report"];
    } catch (error) {
      this.log.error(`cannot read ${choice.report}: ${String(error)}`);
      return false;
    }
    const bottleneck = report.bottleneck ?? {};
    const payload: ProfileReportPayload = {
      ...run.payload,
      reportPath: choice.report,
      htmlPath: choice.html,
      summary: { bottleneck: bottleneck.kind ?? "unknown", share: bottleneck.share ?? 0, stepTimeMs: report.step_time_ms ?? 0 },
      hotLines: undefined,
      comparison: undefined,
      rank: choice.rank,
    };
    await this.draw({ payload, report, runDir: run.runDir });
    return true;
  }

  private async draw(last: LastProfile, deltas?: Map<string, LineDelta>): Promise<void> {
    const { payload, report } = last;
    this.last = last;
    const uri = vscode.Uri.parse(payload.uri);
    const rank = rankSuffix(payload.rank, payload.ranks);
    if (payload.fromTrace) {
      // An analysed trace: its hot lines on every local file it names (the server found them in the workspace).
      for (const key of this.traceFiles) this.lines.delete(key);
      const files = (payload.files ?? []).map((file) => ({ uri: file, fsPath: vscode.Uri.parse(file).fsPath }));
      const drawn = traceHotLines(report, files, payload.hotLines);
      this.traceFiles = [...drawn.keys()].map((file) => vscode.Uri.parse(file).toString());
      for (const [file, lines] of drawn) this.lines.set(vscode.Uri.parse(file).toString(), lines);
    } else if (uri.scheme === "file" && uri.fsPath.endsWith(".py")) {
      this.traceFiles = this.traceFiles.filter((key) => key !== uri.toString()); // the profile's lines replace the trace's
      this.lines.set(uri.toString(), hotLinesFor(report, uri.fsPath, deltas, `torchtriage profile${rank.replace(" · ", ", ")}`));
    } else {
      // A notebook: its cells' hot lines, as the server mapped them from the joined script.
      for (const key of [...this.lines.keys()]) if (vscode.Uri.parse(key).path === uri.path) this.lines.delete(key);
      for (const [cell, lines] of hotLinesFromPayload(payload.hotLines)) this.lines.set(vscode.Uri.parse(cell).toString(), lines);
    }
    const drawn = [...this.lines.values()].reduce((n, lines) => n + lines.length, 0);
    this.log.info(`profile report ${payload.reportPath}: ${verdictText(payload.summary)}${rank}; ${drawn} hot lines drawn`);
    this.status.text = `$(flame) ${verdictText(payload.summary).replace(/^torchtriage: /, "")}${rank}`;
    const since = payload.comparison ? `\nSince the previous profile: ${payload.comparison.verdict}` : "";
    const what = payload.fromTrace ? `the trace ${traceName(payload.tracePath ?? uri.path)}` : `last profile of ${uri.path.split("/").pop()}`;
    this.status.tooltip = `torchtriage: ${what}${rank} — click to open the report${since}`;
    this.status.show();
    await vscode.commands.executeCommand("setContext", "torchtriage.hasReport", true);
    await vscode.commands.executeCommand("setContext", "torchtriage.hasRanks", (payload.ranks?.length ?? 0) > 1);
    this.renderAll();
  }

  clear(): void {
    this.lines.clear();
    this.traceFiles = [];
    this.last = undefined;
    this.run = undefined;
    this.status.hide();
    void vscode.commands.executeCommand("setContext", "torchtriage.hasReport", false);
    void vscode.commands.executeCommand("setContext", "torchtriage.hasRanks", false);
    this.renderAll();
  }

  private renderAll(): void {
    for (const editor of vscode.window.visibleTextEditors) this.render(editor);
  }

  private render(editor: vscode.TextEditor): void {
    const hot = this.enabled ? this.lines.get(editor.document.uri.toString()) ?? [] : [];
    const byLevel: vscode.DecorationOptions[][] = this.types.map(() => []);
    for (const line of hot) {
      if (line.line >= editor.document.lineCount) continue;
      const end = editor.document.lineAt(line.line).range.end;
      byLevel[line.heat].push({
        range: new vscode.Range(end, end),
        hoverMessage: new vscode.MarkdownString(line.hover),
        renderOptions: { after: { contentText: line.label } },
      });
    }
    this.types.forEach((type, level) => editor.setDecorations(type, byLevel[level]));
  }

  private shift(event: vscode.TextDocumentChangeEvent): void {
    const key = event.document.uri.toString();
    const hot = this.lines.get(key);
    if (!hot || event.contentChanges.length === 0) return;
    const changes: LineChange[] = event.contentChanges.map((c) => ({
      startLine: c.range.start.line,
      startCharacter: c.range.start.character,
      endLine: c.range.end.line,
      endCharacter: c.range.end.character,
      text: c.text,
    }));
    this.lines.set(key, shiftLines(hot, changes));
    for (const editor of vscode.window.visibleTextEditors) if (editor.document === event.document) this.render(editor);
  }
}
