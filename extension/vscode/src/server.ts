/**
 * Server lifecycle: find the interpreter, start `python -m torchtriage lsp` with
 * vscode-languageclient, restart it when the interpreter or `enable` changes (other
 * settings go to the running server as a configuration change), and turn every
 * failure into one message with the next step (never a bare `spawn ENOENT`).
 * The server's stderr and every lookup step go to the output channel.
 */
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  RevealOutputChannelOn,
  ServerOptions,
} from "vscode-languageclient/node";
import { InterpreterLocator } from "./interpreter";
import { LookupResult, lookupMessage, SOURCE_LABEL } from "./pure/interpreterLookup";
import { ExtensionSettings, needsRestart, toServerOptions } from "./pure/initOptions";
import { readSettings } from "./settings";

const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 3 * 60_000;
const INSTALL = "Install torchtriage into this environment";
const SELECT = "Select interpreter";
const SHOW_OUTPUT = "Show output";

export class ServerManager implements vscode.Disposable {
  client: LanguageClient | undefined;
  python: string | undefined;
  private settings: ExtensionSettings;
  private queue: Promise<void> = Promise.resolve();
  private crashes: number[] = [];
  private readonly disposables: vscode.Disposable[] = [];
  private readonly started = new vscode.EventEmitter<LanguageClient>();
  /** Fires with each new running client (to register notification handlers). */
  readonly onDidStart = this.started.event;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly locator: InterpreterLocator,
    private readonly middleware: Middleware,
  ) {
    this.settings = readSettings();
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("torchtriage")) void this.settingsChanged();
      }),
      locator.onDidChange(() => this.restart("the Python extension's interpreter changed")),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.restart("the workspace is now trusted")),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.restart("workspace folders changed")),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.started.dispose();
    void this.stop();
  }

  /** Serialised: start, stop and restart never overlap. */
  private enqueue(job: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(job, job).catch((error) => this.log.error(`server lifecycle: ${String(error)}`));
    return this.queue;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  /**
   * The running client once a start or restart under way has finished (a command given while the
   * server is still starting waits for it rather than failing); undefined when it is not running.
   */
  async whenRunning(): Promise<LanguageClient | undefined> {
    await this.queue;
    return this.client?.isRunning() ? this.client : undefined;
  }

  /** The running client; when there is none, undefined after telling the user that `what` cannot happen
   * (an error message with "Show output", which opens the log). */
  async runningFor(what: string): Promise<LanguageClient | undefined> {
    const client = await this.whenRunning();
    if (!client) {
      const choice = await vscode.window.showErrorMessage(`torchtriage: the language server is not running, so ${what}.`, SHOW_OUTPUT);
      if (choice === SHOW_OUTPUT) this.log.show();
    }
    return client;
  }

  restart(reason: string): Promise<void> {
    this.log.info(`restarting the server: ${reason}`);
    this.crashes = [];
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  private async settingsChanged(): Promise<void> {
    const before = this.settings;
    this.settings = readSettings();
    if (needsRestart(before, this.settings)) {
      await this.restart("settings changed (interpreter or enable)");
    } else if (this.client?.isRunning()) {
      const settings = toServerOptions(this.settings, this.python);
      this.log.info(`settings changed: sending ${JSON.stringify(settings)}`);
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings });
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`stopping the server: ${String(error)}`);
      }
    }
  }

  private async doStart(): Promise<void> {
    this.settings = readSettings();
    if (!this.settings.enable) {
      this.log.info("torchtriage.enable is off: the server is not started");
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    const found = await this.locator.find(folder);
    if (found.kind !== "ok") {
      this.python = undefined;
      void this.explain(found);
      return;
    }
    this.python = found.python;
    this.log.info(`starting: ${found.python} -m torchtriage lsp (torchtriage ${found.version}, from ${SOURCE_LABEL[found.source]})`);
    const serverOptions: ServerOptions = {
      command: found.python,
      args: ["-m", "torchtriage", "lsp"],
      options: { env: process.env, cwd: folder?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
        { notebook: "jupyter-notebook", language: "python" },
      ],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: toServerOptions(this.settings, found.python),
      middleware: this.middleware,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => this.closed(),
      },
    };
    const client = new LanguageClient("torchtriage", "torchtriage", serverOptions, clientOptions);
    try {
      await client.start();
    } catch (error) {
      this.log.error(`the server did not start: ${String(error)}`);
      void vscode.window
        .showErrorMessage(`torchtriage: the language server did not start with ${found.python}: ${String(error)}`, SHOW_OUTPUT, SELECT)
        .then((choice) => this.onChoice(choice, found.python));
      return;
    }
    this.client = client;
    this.started.fire(client);
  }

  /** The server exited on its own: restart a few times, then say so once. */
  private closed() {
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < RESTART_WINDOW_MS);
    this.crashes.push(now);
    if (this.crashes.length <= MAX_RESTARTS) {
      this.log.warn(`the server exited; restarting (${this.crashes.length}/${MAX_RESTARTS})`);
      return { action: CloseAction.Restart, handled: true };
    }
    void vscode.window
      .showErrorMessage(
        `torchtriage: the language server crashed ${MAX_RESTARTS + 1} times in 3 minutes and was not restarted. Its output shows why.`,
        SHOW_OUTPUT,
        "Restart",
      )
      .then((choice) => {
        if (choice === SHOW_OUTPUT) this.log.show();
        if (choice === "Restart") void this.restart("requested");
      });
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private async explain(result: LookupResult): Promise<void> {
    const message = lookupMessage(result)!;
    this.log.error(message);
    const python = result.kind === "none" ? undefined : result.python;
    const canInstall = (result.kind === "missing" || result.kind === "too-old") && vscode.workspace.isTrusted;
    const choices = canInstall ? [INSTALL, SELECT, SHOW_OUTPUT] : [SELECT, SHOW_OUTPUT];
    const choice = await vscode.window.showErrorMessage(message, ...choices);
    await this.onChoice(choice, python);
  }

  private async onChoice(choice: string | undefined, python: string | undefined): Promise<void> {
    if (choice === SHOW_OUTPUT) this.log.show();
    if (choice === SELECT) await vscode.commands.executeCommand("torchtriage.selectInterpreter");
    if (choice === INSTALL && python) this.install(python);
  }

  /** pip in a visible terminal; the server restarts when the terminal closes. */
  install(python: string): void {
    const terminal = vscode.window.createTerminal({ name: "torchtriage: install" });
    terminal.show();
    const quoted = `"${python.replace(/"/g, '\\"')}"`;
    terminal.sendText(`${quoted} -m pip install --upgrade "torchtriage[lsp]"; exit`);
    const done = vscode.window.onDidCloseTerminal((closed) => {
      if (closed !== terminal) return;
      done.dispose();
      void this.restart("torchtriage was installed");
    });
    this.disposables.push(done);
  }
}
