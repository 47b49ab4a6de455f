/**
 * Entry point: wires the modules together and registers the commands.
 * Everything shown comes from the language server's LSP contract; this file
 * only decides what happens where.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, Middleware } from "vscode-languageclient/node";
import { Annotations, ProfileReportPayload } from "./annotations";
import { compareWithPrevious } from "./compare";
import { InterpreterLocator } from "./interpreter";
import { Lab } from "./lab";
import { Profiler } from "./profile";
import { showAnotherRank } from "./rankView";
import { ReportView } from "./reportView";
import { ServerManager } from "./server";
import { urisToClear } from "./pure/trace";
import { TraceOpener } from "./trace";
import { TensorBoard, openPerfetto } from "./traceViewers";
import { Verifier } from "./verify";

const PROFILE_REPORT = "torchtriage/profileReport";

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("torchtriage", { log: true });
  const locator = new InterpreterLocator(log);
  const annotations = new Annotations(log);
  const reportView = new ReportView();
  const tensorboard = new TensorBoard(log);
  let profiler: Profiler | undefined;
  let lab: Lab | undefined;
  let verifier: Verifier | undefined;
  let traces: TraceOpener | undefined;

  const middleware: Middleware = {
    // Server commands reached from code lenses: profiling runs user code (trust, progress), reports open here.
    executeCommand: async (command, args, next) => {
      if (command === "torchtriage.profile") {
        const uri = typeof args[0] === "string" ? vscode.Uri.parse(args[0]) : undefined;
        if (uri && (uri.scheme === "vscode-notebook-cell" || uri.path.endsWith(".ipynb"))) return profiler?.profileCell();
        return profiler?.profileScript(uri);
      }
      if (command === "torchtriage.lab" && typeof args[0] === "string") return lab?.run(vscode.Uri.parse(args[0]));
      if (command === "torchtriage.verifyFixes") {
        const target = typeof args[0] === "string" ? args[0] : args[0]?.uri;
        return verifier?.run(typeof target === "string" ? vscode.Uri.parse(target) : undefined);
      }
      if (command === "torchtriage.showReport" && typeof args[0] === "string") return showReport(args[0]);
      if (command === "torchtriage.analyze") {
        const target = typeof args[0] === "string" ? args[0] : args[0]?.path;
        return traces?.open(typeof target === "string" ? (target.startsWith("file:") ? vscode.Uri.parse(target) : vscode.Uri.file(target)) : undefined);
      }
      return next(command, args);
    },
    window: {
      // report.html opened by the server goes to the webview rather than an external browser.
      showDocument: async (params, token, next) => {
        const uri = vscode.Uri.parse(params.uri);
        if (uri.scheme === "file" && uri.fsPath.endsWith("report.html")) {
          await reportView.show(uri.fsPath);
          return { success: true };
        }
        return next(params, token);
      },
    },
    // The server's inlay hints repeat the after-line labels this extension draws on .py files.
    provideInlayHints: async (document, range, token, next) => (annotations.draws(document.uri) ? [] : next(document, range, token)),
  };

  const server = new ServerManager(log, locator, middleware);
  profiler = new Profiler(server, annotations, reportView, log);
  lab = new Lab(server, reportView, log);
  verifier = new Verifier(server, log);
  traces = new TraceOpener(server, annotations, reportView, log);
  server.onDidStart((client) => {
    client.onNotification(PROFILE_REPORT, (payload: ProfileReportPayload) => void annotations.onReport(payload));
  });

  async function showReport(reportPath?: string): Promise<void> {
    const html = reportPath ? reportPath.replace(/report\.json$/, "report.html") : annotations.last?.payload.htmlPath;
    if (!html) {
      void vscode.window.showInformationMessage("torchtriage: no profile yet. Run \"torchtriage: Profile this script\" first.");
      return;
    }
    await reportView.show(html);
  }

  const requireLast = () => {
    if (!annotations.last) void vscode.window.showInformationMessage("torchtriage: no profile yet in this window.");
    return annotations.last;
  };

  const register = (id: string, run: (...args: any[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, run));
  register("torchtriage.profileScript", (uri?: vscode.Uri) => profiler!.profileScript(uri instanceof vscode.Uri ? uri : undefined));
  register("torchtriage.profileCell", (cell?: vscode.NotebookCell) => profiler!.profileCell(cell));
  register("torchtriage.profileScriptWithProcesses", (uri?: vscode.Uri) => profiler!.profileScriptWithProcesses(uri instanceof vscode.Uri ? uri : undefined));
  register("torchtriage.showRank", () => showAnotherRank(annotations, reportView));
  register("torchtriage.runLab", (uri?: vscode.Uri) => lab!.run(uri instanceof vscode.Uri ? uri : undefined));
  // Not `torchtriage.verifyFixes`: the language client registers the server's command under that name.
  register("torchtriage.verifyFixesInFile", (uri?: vscode.Uri) => verifier!.run(uri instanceof vscode.Uri ? uri : undefined));
  register("torchtriage.compareWithPrevious", () => compareWithPrevious(server, annotations, reportView, log));
  register("torchtriage.showLastReport", () => showReport());
  // Not `torchtriage.analyze`: the language client registers the server's command under that name.
  register("torchtriage.openTrace", (uri?: vscode.Uri) => traces!.open(uri instanceof vscode.Uri ? uri : undefined));
  register("torchtriage.clearAnnotations", async () => {
    const uris = annotations.last ? urisToClear(annotations.last.payload) : [];
    annotations.clear();
    for (const uri of uris) {
      if (!server.client?.isRunning()) break;
      await server.client.sendRequest(ExecuteCommandRequest.type, { command: "torchtriage.clearProfile", arguments: [uri] });
    }
  });
  register("torchtriage.openPerfetto", async () => {
    const last = requireLast();
    if (last) await openPerfetto(last);
  });
  register("torchtriage.openTensorBoard", async () => {
    const last = requireLast();
    if (last && Profiler.allowed()) await tensorboard.open(last, server.python);
  });
  register("torchtriage.fixAllInFile", async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || !server.client?.isRunning()) return;
    await server.client.sendRequest(ExecuteCommandRequest.type, { command: "torchtriage.fixAll", arguments: [editor.document.uri.toString()] });
  });
  register("torchtriage.selectInterpreter", () => selectInterpreter(server));
  register("torchtriage.restartServer", () => server.restart("requested"));
  register("torchtriage.showOutput", () => log.show());

  context.subscriptions.push(log, locator, annotations, reportView, tensorboard, server);
  void vscode.commands.executeCommand("setContext", "torchtriage.hasReport", false);
  void vscode.commands.executeCommand("setContext", "torchtriage.hasRanks", false);
  void server.start();
}

export function deactivate(): void {
  // Disposables registered on the context stop the server and TensorBoard.
}

async function selectInterpreter(server: ServerManager): Promise<void> {
  const items: (vscode.QuickPickItem & { action: string })[] = [];
  if (vscode.extensions.getExtension("ms-python.python")) {
    items.push({ label: "$(python) Use the Python extension's interpreter", description: "python.setInterpreter", action: "python" });
  }
  items.push({ label: "$(folder-opened) Browse for a Python executable…", action: "browse" });
  items.push({ label: "$(edit) Enter the interpreter path…", action: "enter" });
  if (server.python) items.push({ label: `$(check) Keep ${server.python}`, action: "keep" });
  const picked = await vscode.window.showQuickPick(items, { title: "torchtriage: Python that runs the language server and profiles" });
  if (!picked || picked.action === "keep") return;
  const config = vscode.workspace.getConfiguration("torchtriage");
  const target = vscode.workspace.workspaceFolders ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  if (picked.action === "python") {
    await config.update("interpreter", "", target); // fall through to the Python extension's choice
    await vscode.commands.executeCommand("python.setInterpreter");
    return;
  }
  let value: string | undefined;
  if (picked.action === "browse") {
    const chosen = await vscode.window.showOpenDialog({ canSelectMany: false, title: "Python executable" });
    value = chosen?.[0]?.fsPath;
  } else {
    value = await vscode.window.showInputBox({ prompt: "Path of a Python executable with torchtriage installed", value: server.python ?? "" });
  }
  if (value) await config.update("interpreter", value, target);
}
