/**
 * Which Python runs `torchtriage lsp`: a documented, logged list of steps.
 *
 *   1. the `torchtriage.interpreter` setting (workspace folder, then user);
 *   2. the Python extension's active environment for the workspace folder
 *      (ms-python.python `environments` API), when that extension is installed;
 *   3. `python3` on PATH.
 *
 * The first step that names an interpreter wins; that interpreter is then probed
 * with `python -m torchtriage --version` and must meet MIN_TORCHTRIAGE_VERSION.
 * A chosen interpreter that fails the probe is reported, not skipped: silently
 * falling through to another Python would lint with a different environment than
 * the one the user picked.  Pure logic (no 'vscode' import): the host passes the
 * sources and the probe in.
 */

export const MIN_TORCHTRIAGE_VERSION = "0.1.0";

export type SourceName = "setting" | "python-extension" | "path";

export interface LookupSources {
  /** The `torchtriage.interpreter` setting ("" or undefined: unset). */
  setting: string | undefined;
  /** The Python extension's active environment, or undefined when it is not installed / has none. */
  pythonExtension: () => Promise<string | undefined>;
  /** Whether the Python extension is installed at all (for the log). */
  pythonExtensionInstalled: boolean;
  /** `python3` on PATH (absolute path), or undefined. */
  onPath: () => Promise<string | undefined>;
}

export interface Probe {
  /** stdout of `python -m torchtriage --version` (e.g. "torchtriage 0.1.0"), or the failure. */
  (python: string): Promise<{ ok: true; output: string } | { ok: false; error: string; notFound: boolean }>;
}

export type LookupResult =
  | { kind: "ok"; python: string; source: SourceName; version: string }
  | { kind: "none" } // no step named an interpreter
  | { kind: "not-found"; python: string; source: SourceName; detail: string } // the file does not exist / not executable
  | { kind: "missing"; python: string; source: SourceName; detail: string } // torchtriage not importable
  | { kind: "too-old"; python: string; source: SourceName; version: string };

export const SOURCE_LABEL: Record<SourceName, string> = {
  setting: "the torchtriage.interpreter setting",
  "python-extension": "the Python extension's active environment",
  path: "python3 on PATH",
};

/** "torchtriage 0.1.0" / "0.1.0.dev3" -> [0, 1, 0]; undefined when no version is found. */
export function parseVersion(text: string): number[] | undefined {
  const match = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export function meetsMinimum(version: string, minimum: string = MIN_TORCHTRIAGE_VERSION): boolean {
  const have = parseVersion(version);
  const need = parseVersion(minimum)!;
  if (!have) return false;
  for (let i = 0; i < 3; i++) {
    if (have[i] !== need[i]) return have[i] > need[i];
  }
  return true;
}

/** Runs the steps in order, logging each; probes the first interpreter found. */
export async function lookupInterpreter(
  sources: LookupSources,
  probe: Probe,
  log: (line: string) => void,
  minimum: string = MIN_TORCHTRIAGE_VERSION,
): Promise<LookupResult> {
  let python: string | undefined;
  let source: SourceName | undefined;

  const setting = sources.setting?.trim();
  if (setting) {
    log(`1. torchtriage.interpreter setting: ${setting}`);
    python = setting;
    source = "setting";
  } else {
    log("1. torchtriage.interpreter setting: not set");
    if (!sources.pythonExtensionInstalled) {
      log("2. Python extension (ms-python.python): not installed");
    } else {
      const active = await sources.pythonExtension();
      log(`2. Python extension active environment: ${active ?? "none selected"}`);
      if (active) {
        python = active;
        source = "python-extension";
      }
    }
    if (!python) {
      const onPath = await sources.onPath();
      log(`3. python3 on PATH: ${onPath ?? "not found"}`);
      if (onPath) {
        python = onPath;
        source = "path";
      }
    }
  }
  if (!python || !source) {
    log("no interpreter found");
    return { kind: "none" };
  }

  log(`checking: ${python} -m torchtriage --version`);
  const result = await probe(python);
  if (!result.ok) {
    log(`  failed: ${result.error.trim()}`);
    return result.notFound
      ? { kind: "not-found", python, source, detail: result.error }
      : { kind: "missing", python, source, detail: result.error };
  }
  const version = result.output.trim();
  log(`  ${version}`);
  if (!meetsMinimum(version, minimum)) {
    log(`  older than ${minimum}, which this extension needs`);
    return { kind: "too-old", python, source, version };
  }
  return { kind: "ok", python, source, version: parseVersion(version)!.join(".") };
}

/** One clear message for a failed lookup (the host adds the buttons). */
export function lookupMessage(result: LookupResult, minimum: string = MIN_TORCHTRIAGE_VERSION): string | undefined {
  switch (result.kind) {
    case "ok":
      return undefined;
    case "none":
      return "torchtriage: no Python found (torchtriage.interpreter is not set, no Python extension environment, no python3 on PATH). Select an interpreter that has torchtriage installed.";
    case "not-found":
      return `torchtriage: the interpreter ${result.python} (from ${SOURCE_LABEL[result.source]}) does not exist or cannot be run. Select another interpreter.`;
    case "missing":
      return `torchtriage: torchtriage is not installed in ${result.python} (from ${SOURCE_LABEL[result.source]}).`;
    case "too-old":
      return `torchtriage: ${result.python} has ${result.version}, older than ${minimum} which this extension needs.`;
  }
}
