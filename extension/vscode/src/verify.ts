/**
 * Verify fixes: `workspace/executeCommand torchtriage.verifyFixes` on the active script
 * (`torchtriage fix --verify`: the script and each fixed copy profiled with the same seed
 * and window, interleaved) behind a cancellable progress notification; then each fix's
 * change as a message, with *Apply* (`torchtriage.applyVerifiedFixes`) when a fix helps,
 * and every fix's verdict in the output channel. Refused in an untrusted workspace, like
 * profiling: it runs the user's code.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import { Profiler } from "./profile";
import { VerifyReportPayload, chosenFix, fixName, verifyLogLines, verifyMessage } from "./pure/verify";
import { ServerManager } from "./server";
import { errorText, executeWithProgress, wasCancelled } from "./serverCommand";

export const APPLY = "Apply";
const DETAILS = "Show details";

export class Verifier {
  private running = new Set<string>();

  constructor(
    private readonly server: ServerManager,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async run(target?: vscode.Uri): Promise<VerifyReportPayload | undefined> {
    if (!Profiler.allowed()) return undefined;
    const uri = target ?? vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== "file" || !uri.fsPath.endsWith(".py")) {
      void vscode.window.showErrorMessage("torchtriage: open a Python script (.py) to verify its fixes.");
      return undefined;
    }
    const client = await this.server.runningFor("the fixes cannot be verified");
    if (!client) return undefined;
    const name = vscode.workspace.asRelativePath(uri);
    const document = await vscode.workspace.openTextDocument(uri); // the server runs open documents
    if (document.isDirty) await document.save(); // the runs use the file on disk
    const key = uri.toString();
    if (this.running.has(key)) {
      void vscode.window.showInformationMessage(`torchtriage: the fixes of ${name} are already being verified.`);
      return undefined;
    }
    this.running.add(key);
    const repeat = vscode.workspace.getConfiguration("torchtriage", uri).get<number>("verify.repeat", 3);
    this.log.info(`verifying the fixes of ${uri.fsPath} (${repeat} runs of each version)`);
    try {
      const argument = { uri: uri.toString(), repeat };
      const payload = await executeWithProgress<VerifyReportPayload>(client, "torchtriage.verifyFixes", argument, `torchtriage: verifying the fixes of ${name}`);
      if (!payload) return undefined;
      this.log.info(`fix --verify ${payload.verifyJson}:\n${verifyLogLines(payload).map((line) => `  ${line}`).join("\n")}`);
      void this.offer(payload, uri, name);
      return payload;
    } catch (error) {
      if (wasCancelled(error)) {
        this.log.info(`verifying the fixes of ${name} cancelled`);
        void vscode.window.showInformationMessage(`torchtriage: verifying the fixes of ${name} cancelled; the run in progress was stopped.`);
      } else {
        // The server has already shown the run's own error (its exit code and last output lines).
        this.log.error(`verifying the fixes of ${name} failed: ${errorText(error)}`);
      }
      return undefined;
    } finally {
      this.running.delete(key);
    }
  }

  /** The result message; *Apply* when a fix helps. */
  private async offer(payload: VerifyReportPayload, uri: vscode.Uri, name: string): Promise<void> {
    const chosen = chosenFix(payload);
    const buttons = chosen && payload.kept.length ? [APPLY, DETAILS] : [DETAILS];
    const message = verifyMessage(payload, name);
    const choice = payload.warnings.length
      ? await vscode.window.showWarningMessage(message, ...buttons)
      : await vscode.window.showInformationMessage(message, ...buttons);
    if (choice === DETAILS) this.log.show(true);
    if (choice !== APPLY || !chosen) return;
    const client = await this.server.whenRunning();
    if (!client) return;
    await vscode.workspace.openTextDocument(uri); // the server applies to open documents only
    try {
      const applied = await client.sendRequest(ExecuteCommandRequest.type, {
        command: "torchtriage.applyVerifiedFixes",
        arguments: [{ uri: uri.toString(), verifyJson: payload.verifyJson }],
      });
      // A refusal (the text changed since it was verified) is explained by the server's own message.
      if (applied === true) {
        this.log.info(`applied ${fixName(chosen)} to ${uri.fsPath}`);
        void vscode.window.showInformationMessage(`torchtriage: applied ${fixName(chosen)} to ${name} (unsaved).`);
      }
    } catch (error) {
      this.log.error(`applying the verified fixes of ${name} failed: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`torchtriage: applying the verified fixes of ${name} failed: ${errorText(error)}`);
    }
  }
}
