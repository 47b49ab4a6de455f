/**
 * A long server command (`torchtriage.profile`, `torchtriage.lab`) behind a
 * progress notification: the server's `$/progress` reports feed it, and its
 * Cancel button cancels the request (the server then kills the run).
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, ResponseError, WorkDoneProgress } from "vscode-languageclient/node";

let nextToken = 0;

/** `workspace/executeCommand` with a work-done token shown as a cancellable notification; the command's result. */
export async function executeWithProgress<T>(client: LanguageClient, command: string, argument: unknown, title: string): Promise<T> {
  const token = `${command}-${process.pid}-${nextToken++}`;
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, cancel) => {
    let last = 0;
    const listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === "end") return;
      const increment = value.percentage !== undefined ? Math.max(0, value.percentage - last) : undefined;
      if (value.percentage !== undefined) last = value.percentage;
      progress.report({ message: value.message, increment });
    });
    try {
      return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument], workDoneToken: token }, cancel)) as T;
    } finally {
      listener.dispose();
    }
  });
}

/** Whether a request failed because it was cancelled (the Cancel button or `$/cancelRequest`). */
export function wasCancelled(error: unknown): boolean {
  return error instanceof ResponseError && (error.code === -32800 || /cancel/i.test(error.message));
}

/** The server's own message for a failed request (its InvalidParams text says what to do). */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
