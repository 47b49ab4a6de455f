/**
 * Open a trace…: a torch.profiler trace recorded elsewhere (a chrome trace `.json` / `.json.gz` /
 * `.pt.trace.json(.gz)`, or a `tensorboard_trace_handler` folder of them, one per worker or rank)
 * analysed by the language server (`torchtriage.analyze`, behind a cancellable progress notification),
 * then its report in the webview and its hot lines drawn on the local files it names (the hottest one
 * opened at its hottest line).  The trace is the explorer's file or folder (its context menu), else one
 * picked in a quick pick: the traces found in the workspace (a folder of several as one choice), or an
 * open dialog for a file or for a folder (a native dialog on Windows and Linux selects one kind, not both).
 * Nothing of the user's runs: allowed in an untrusted workspace too.
 */
import * as vscode from "vscode";
import { Annotations, ProfileReportPayload } from "./annotations";
import { TRACE_FILTERS, analyzeArgument, traceMessage, traceName } from "./pure/trace";
import { FoundTrace, MAX_TRACES, TRACE_EXCLUDE, TRACE_GLOB, TraceChoice, traceChoices, tracePickPlaceholder } from "./pure/traceChoices";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { errorText, executeWithProgress, wasCancelled } from "./serverCommand";

/** A trace file found in the workspace, with its URI. */
interface FoundUri extends FoundTrace {
  uri: vscode.Uri;
}

/** A quick pick item: a trace (file or folder) found in the workspace, or one of the open dialogs. */
interface TracePickItem extends vscode.QuickPickItem {
  uri?: vscode.Uri;
  browse?: "file" | "folder";
}

/** The open dialogs, last in the quick pick (the same objects throughout, so the active one can be kept). */
const BROWSE_ITEMS: TracePickItem[] = [
  { label: "browse", kind: vscode.QuickPickItemKind.Separator },
  { label: "Browse for a trace file…", description: ".json, .json.gz, .pt.trace.json", iconPath: new vscode.ThemeIcon("go-to-file"), browse: "file" },
  { label: "Browse for a folder of traces…", description: "a tensorboard_trace_handler logdir", iconPath: new vscode.ThemeIcon("folder-opened"), browse: "folder" },
];

/** The quick pick item of a trace found in the workspace: a folder's URI is its files' parent. */
function traceItem(choice: TraceChoice<FoundUri>): TracePickItem {
  const file = choice.files[0].uri;
  const folder = choice.kind === "folder";
  return {
    label: choice.label,
    description: choice.description,
    iconPath: new vscode.ThemeIcon(folder ? "folder" : "file"),
    uri: folder ? vscode.Uri.joinPath(file, "..") : file,
  };
}

export class TraceOpener {
  private running = new Set<string>();

  constructor(
    private readonly server: ServerManager,
    private readonly annotations: Annotations,
    private readonly reportView: ReportView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The trace `target` (the explorer's file or folder), else the one picked in the quick pick (or its open dialogs). */
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

  /** The trace picked: one found in the workspace, or one browsed for in an open dialog. */
  private async pick(): Promise<vscode.Uri | undefined> {
    const picked = await this.choose();
    return picked?.browse ? this.browse(picked.browse) : picked?.uri;
  }

  /**
   * The quick pick, shown at once with the open dialogs in it; the workspace's traces are added when found
   * (the active item kept if the user moved to another than the first or typed a filter).
   */
  private async choose(): Promise<TracePickItem | undefined> {
    const quickPick = vscode.window.createQuickPick<TracePickItem>();
    quickPick.title = "torchtriage: open a trace recorded with torch.profiler";
    quickPick.placeholder = "Looking for traces in the workspace…";
    quickPick.matchOnDescription = true;
    quickPick.items = BROWSE_ITEMS;
    quickPick.busy = true;
    const search = new vscode.CancellationTokenSource();
    const fill = (items: TracePickItem[], placeholder: string) => {
      if (search.token.isCancellationRequested) return;
      const active = quickPick.activeItems[0];
      const keep = active && (active !== BROWSE_ITEMS[1] || quickPick.value !== "");
      quickPick.items = items;
      if (keep && items.includes(active)) quickPick.activeItems = [active];
      quickPick.placeholder = placeholder;
      quickPick.busy = false;
    };
    void this.workspaceTraces(search.token).then(
      ({ files, truncated }) => {
        const choices = traceChoices(files, Date.now()).map(traceItem);
        const found: TracePickItem[] = choices.length ? [{ label: "in the workspace", kind: vscode.QuickPickItemKind.Separator }, ...choices] : [];
        fill([...found, ...BROWSE_ITEMS], tracePickPlaceholder(choices.length, truncated));
      },
      (error) => {
        this.log.warn(`looking for traces in the workspace failed: ${errorText(error)}`);
        fill(BROWSE_ITEMS, "Browse for a trace file, or for a folder of them");
      },
    );
    try {
      return await new Promise<TracePickItem | undefined>((resolve) => {
        quickPick.onDidAccept(() => {
          const item = quickPick.selectedItems[0];
          if (item) resolve(item); // Enter on a filter that matches nothing leaves the pick open
        });
        quickPick.onDidHide(() => resolve(undefined));
        quickPick.show();
      });
    } finally {
      search.cancel();
      search.dispose();
      quickPick.dispose();
    }
  }

  /** The workspace's trace files (at most MAX_TRACES), with their sizes and times, and whether more may be there. */
  private async workspaceTraces(token: vscode.CancellationToken): Promise<{ files: FoundUri[]; truncated: boolean }> {
    const uris = await vscode.workspace.findFiles(TRACE_GLOB, TRACE_EXCLUDE, MAX_TRACES, token);
    const files = await Promise.all(
      uris.map(async (uri) => {
        const stat = await Promise.resolve(vscode.workspace.fs.stat(uri)).catch(() => undefined);
        return { uri, relativePath: vscode.workspace.asRelativePath(uri), size: stat?.size ?? 0, mtime: stat?.mtime ?? 0 };
      }),
    );
    return { files, truncated: uris.length >= MAX_TRACES };
  }

  /** The open dialog for a trace file, or for a folder of them (a native dialog selects one kind on Windows and Linux). */
  private async browse(kind: "file" | "folder"): Promise<vscode.Uri | undefined> {
    const chosen = await vscode.window.showOpenDialog({
      title: kind === "file" ? "torchtriage: the trace file to analyse" : "torchtriage: the folder of traces to analyse (a tensorboard_trace_handler logdir)",
      openLabel: "Analyse",
      canSelectFiles: kind === "file",
      canSelectFolders: kind === "folder",
      canSelectMany: false,
      ...(kind === "file" ? { filters: TRACE_FILTERS } : {}),
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    return chosen?.[0];
  }
}
