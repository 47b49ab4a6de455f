/** The contributed `torchtriage.*` settings, read once per change. */
import * as vscode from "vscode";
import { DEFAULT_SETTINGS, ExtensionSettings } from "./pure/initOptions";

export function readSettings(scope?: vscode.ConfigurationScope): ExtensionSettings {
  const config = vscode.workspace.getConfiguration("torchtriage", scope ?? vscode.workspace.workspaceFolders?.[0]);
  return {
    enable: config.get("enable", DEFAULT_SETTINGS.enable),
    interpreter: config.get("interpreter", DEFAULT_SETTINGS.interpreter),
    select: config.get("select", DEFAULT_SETTINGS.select),
    ignore: config.get("ignore", DEFAULT_SETTINGS.ignore),
    severity: config.get("severity", DEFAULT_SETTINGS.severity),
    device: config.get("device", DEFAULT_SETTINGS.device),
    annotationsEnable: config.get("annotations.enable", DEFAULT_SETTINGS.annotationsEnable),
    traceServer: config.get("trace.server", DEFAULT_SETTINGS.traceServer),
    profileSteps: config.get("profile.steps", DEFAULT_SETTINGS.profileSteps),
    profileTimeout: config.get("profile.timeout", DEFAULT_SETTINGS.profileTimeout),
    runFolder: config.get("profile.runFolder", DEFAULT_SETTINGS.runFolder),
  };
}
