/**
 * The host side of the interpreter lookup (the order itself lives in
 * pure/interpreterLookup.ts): reads the setting, asks the Python extension's
 * public `environments` API, searches PATH, probes with
 * `python -m torchtriage --version`, and tells listeners when the Python
 * extension's active environment changes.
 */
import { execFile } from "node:child_process";
import { constants, promises as fs } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { LookupResult, lookupInterpreter } from "./pure/interpreterLookup";

/** The part of ms-python.python's exported API used here (its `environments` API). */
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): { id: string; path: string };
  resolveEnvironment(env: { id: string; path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<{ id: string; path: string; resource?: vscode.WorkspaceFolder }>;
}

const PYTHON_EXTENSION = "ms-python.python";
const PROBE_TIMEOUT_MS = 30_000;

export class InterpreterLocator implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the Python extension's active environment changes. */
  readonly onDidChange = this.changed.event;
  private subscription: vscode.Disposable | undefined;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  dispose(): void {
    this.subscription?.dispose();
    this.changed.dispose();
  }

  async find(folder: vscode.WorkspaceFolder | undefined): Promise<LookupResult> {
    const setting = vscode.workspace.getConfiguration("torchtriage", folder).get<string>("interpreter", "");
    const extension = vscode.extensions.getExtension(PYTHON_EXTENSION);
    this.log.info(`interpreter lookup for ${folder ? folder.uri.fsPath : "(no workspace folder)"}:`);
    return lookupInterpreter(
      {
        setting: expandVariables(setting, folder),
        pythonExtensionInstalled: extension !== undefined,
        pythonExtension: () => this.fromPythonExtension(extension, folder),
        onPath: () => findOnPath("python3"),
      },
      probe,
      (line) => this.log.info(`  ${line}`),
    );
  }

  private async fromPythonExtension(
    extension: vscode.Extension<unknown> | undefined,
    folder: vscode.WorkspaceFolder | undefined,
  ): Promise<string | undefined> {
    if (!extension) return undefined;
    try {
      const exports = (extension.isActive ? extension.exports : await extension.activate()) as { environments?: PythonEnvironmentsApi };
      const api = exports?.environments;
      if (!api) {
        this.log.warn("  the Python extension has no `environments` API (too old?)");
        return undefined;
      }
      if (!this.subscription) {
        this.subscription = api.onDidChangeActiveEnvironmentPath(() => {
          this.log.info("the Python extension's active environment changed");
          this.changed.fire();
        });
      }
      const active = api.getActiveEnvironmentPath(folder?.uri);
      const resolved = await api.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath ?? active?.path;
    } catch (error) {
      this.log.warn(`  the Python extension's API failed: ${String(error)}`);
      return undefined;
    }
  }
}

/** `${workspaceFolder}` and `~` in the setting. */
function expandVariables(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let result = value.trim();
  if (folder) result = result.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
  if (result.startsWith("~/") && process.env.HOME) result = path.join(process.env.HOME, result.slice(2));
  return result;
}

export async function findOnPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      await fs.access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function probe(python: string): Promise<{ ok: true; output: string } | { ok: false; error: string; notFound: boolean }> {
  return new Promise((resolve) => {
    execFile(python, ["-m", "torchtriage", "--version"], { timeout: PROBE_TIMEOUT_MS, env: process.env }, (error, stdout, stderr) => {
      if (!error) {
        resolve({ ok: true, output: stdout || stderr });
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      const notFound = code === "ENOENT" || code === "EACCES";
      const detail = notFound ? `${python}: not found or not executable` : (stderr || stdout || error.message).trim().split("\n").slice(-3).join("\n");
      resolve({ ok: false, error: detail, notFound });
    });
  });
}
