/**
 * VS Code settings -> the server's options (`initializationOptions` and
 * `workspace/didChangeConfiguration`), in the keys the server documents:
 * the `[tool.torchtriage]` keys plus `interpreter`, `profileSteps`, `profileTimeout`, `runFolder`.  Only keys the server knows
 * are sent (it reports unknown keys), and empty values are left out so a
 * `pyproject.toml` and the server's defaults apply.  Pure: no 'vscode' import.
 */

export interface ExtensionSettings {
  enable: boolean;
  interpreter: string;
  select: string[];
  ignore: string[];
  severity: Record<string, string>;
  device: string;
  annotationsEnable: boolean;
  traceServer: string;
  /** null or 0: automatic (the CLI's adaptive window, no `--active`). */
  profileSteps: number | null;
  profileTimeout: number;
  runFolder: string;
}

export const DEFAULT_SETTINGS: ExtensionSettings = {
  enable: true,
  interpreter: "",
  select: [],
  ignore: [],
  severity: {},
  device: "auto",
  annotationsEnable: true,
  traceServer: "off",
  profileSteps: null,
  profileTimeout: 300,
  runFolder: "",
};

export interface ServerOptions {
  select?: string[];
  ignore?: string[];
  severity?: Record<string, string>;
  device?: string;
  interpreter?: string;
  profileSteps?: number;
  profileTimeout?: number;
  runFolder?: string;
}

function codes(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.filter((v): v is string => typeof v === "string" && v.trim() !== "").map((v) => v.trim());
}

/** `resolvedPython`: the interpreter the lookup chose; it runs profiles too. */
export function toServerOptions(settings: Partial<ExtensionSettings>, resolvedPython?: string): ServerOptions {
  const options: ServerOptions = {};
  const select = codes(settings.select);
  if (select.length) options.select = select;
  const ignore = codes(settings.ignore);
  if (ignore.length) options.ignore = ignore;
  if (settings.severity && typeof settings.severity === "object") {
    const entries = Object.entries(settings.severity).filter(([code, level]) => code.trim() && typeof level === "string");
    if (entries.length) options.severity = Object.fromEntries(entries.map(([code, level]) => [code.trim().toUpperCase(), level.toLowerCase()]));
  }
  if (settings.device && settings.device !== "auto") options.device = settings.device;
  if (resolvedPython) options.interpreter = resolvedPython;
  const steps = settings.profileSteps;  // null or 0: automatic, nothing sent
  if (typeof steps === "number" && Number.isInteger(steps) && steps >= 1) options.profileSteps = steps;
  if (typeof settings.profileTimeout === "number" && settings.profileTimeout > 0) options.profileTimeout = settings.profileTimeout;
  if (typeof settings.runFolder === "string" && settings.runFolder.trim()) options.runFolder = settings.runFolder.trim();
  return options;
}

/** Whether a change between two settings needs a server restart (else a configuration change is enough). */
export function needsRestart(before: Partial<ExtensionSettings>, after: Partial<ExtensionSettings>): boolean {
  return before.enable !== after.enable || (before.interpreter ?? "") !== (after.interpreter ?? "");
}
