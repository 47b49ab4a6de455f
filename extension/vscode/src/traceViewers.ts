/**
 * The run's trace in other viewers: Perfetto (ui.perfetto.dev in the browser, with
 * the local trace file revealed and its path copied: Perfetto opens local files
 * itself) and TensorBoard (launched locally on the run's `tb/` logdir, URL opened).
 */
import { ChildProcess, spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import * as vscode from "vscode";
import { LastProfile } from "./annotations";

const TENSORBOARD_START_TIMEOUT_MS = 90_000;

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

export async function traceFile(last: LastProfile): Promise<string | undefined> {
  const candidates = [...(last.report.trace?.chrome_traces ?? []), path.join(path.dirname(last.payload.reportPath), "trace.json.gz"), path.join(path.dirname(last.payload.reportPath), "trace.json")];
  for (const candidate of candidates) if (await exists(candidate)) return candidate;
  return undefined;
}

export async function openPerfetto(last: LastProfile): Promise<void> {
  const trace = await traceFile(last);
  if (!trace) {
    void vscode.window.showErrorMessage("torchtriage: this run has no trace file (trace.json.gz) to open.");
    return;
  }
  await vscode.env.clipboard.writeText(trace);
  await vscode.env.openExternal(vscode.Uri.parse("https://ui.perfetto.dev/"));
  const reveal = "Reveal trace file";
  const choice = await vscode.window.showInformationMessage(
    `torchtriage: Perfetto opened in the browser. Choose "Open trace file" there and pick ${trace} (path copied to the clipboard).`,
    reveal,
  );
  if (choice === reveal) await vscode.commands.executeCommand("revealFileInOS", vscode.Uri.file(trace));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

export class TensorBoard implements vscode.Disposable {
  private readonly running = new Map<string, { process: ChildProcess; url: string }>();

  constructor(private readonly log: vscode.LogOutputChannel) {}

  dispose(): void {
    for (const { process } of this.running.values()) process.kill();
    this.running.clear();
  }

  async open(last: LastProfile, python: string | undefined): Promise<void> {
    const logdir = path.join(last.runDir, "tb"); // a rank's report sits in rank<k>/ below the run folder
    if (!(await exists(logdir))) {
      void vscode.window.showErrorMessage(`torchtriage: this run has no TensorBoard logdir (${logdir}).`);
      return;
    }
    if (!python) {
      void vscode.window.showErrorMessage("torchtriage: no interpreter is running the server; select one first.", "Select interpreter").then((c) => {
        if (c) void vscode.commands.executeCommand("torchtriage.selectInterpreter");
      });
      return;
    }
    const known = this.running.get(logdir);
    if (known && known.process.exitCode === null) {
      await vscode.env.openExternal(vscode.Uri.parse(known.url));
      return;
    }
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/#pytorch_profiler`;
    const args = ["-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1", "--port", String(port)];
    this.log.info(`starting TensorBoard: ${python} ${args.join(" ")}`);
    const child = spawn(python, args, { env: process.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const started = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "torchtriage: starting TensorBoard", cancellable: true },
      (_, token) =>
        new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), TENSORBOARD_START_TIMEOUT_MS);
          const onData = (data: Buffer) => {
            output += data.toString();
            this.log.info(`[tensorboard] ${data.toString().trimEnd()}`);
            if (/https?:\/\/\S+:\d+/.test(output)) {
              clearTimeout(timer);
              resolve(true);
            }
          };
          child.stdout?.on("data", onData);
          child.stderr?.on("data", onData);
          child.on("error", () => resolve(false));
          child.on("exit", () => resolve(false));
          token.onCancellationRequested(() => resolve(false));
        }),
    );
    if (!started) {
      child.kill();
      const missing = /No module named '?tensorboard/.test(output);
      const message = missing
        ? `torchtriage: TensorBoard is not installed in ${python}.`
        : `torchtriage: TensorBoard did not start: ${output.trim().split("\n").slice(-2).join(" ") || "no output"}`;
      const install = "Install TensorBoard";
      const choice = await vscode.window.showErrorMessage(message, ...(missing && vscode.workspace.isTrusted ? [install] : []));
      if (choice === install) {
        const terminal = vscode.window.createTerminal({ name: "torchtriage: install TensorBoard" });
        terminal.show();
        terminal.sendText(`"${python}" -m pip install tensorboard torch-tb-profiler`);
      }
      return;
    }
    this.running.set(logdir, { process: child, url });
    await vscode.env.openExternal(vscode.Uri.parse(url));
  }
}
