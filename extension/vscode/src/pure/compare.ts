/**
 * compare.json (schema 1.x, the `torchtriage.compare` result and the
 * `comparison.document` of a re-profile's `torchtriage/profileReport`) -> what
 * the editor shows: the verdict message, the newer run's report.html (where the
 * server wrote the "Compared with" section) and each hot line's change.
 * Pure: no 'vscode'.
 */
import * as path from "node:path";
import { LineDelta } from "./delta";
import { lineKey } from "./hotLines";

export interface CompareLineSide {
  path?: string;
  line?: number;
  hot?: boolean;
}

export interface CompareLine {
  match?: string;
  before?: CompareLineSide | null;
  after?: CompareLineSide | null;
  delta_ms?: number;
  measurable?: boolean;
}

export interface CompareRun {
  run_dir?: string;
  report?: string;
  script?: string;
}

export interface CompareDocument {
  schema_version?: string;
  before?: CompareRun;
  after?: CompareRun;
  warnings?: string[];
  step_time?: { before_ms?: number; after_ms?: number; speedup?: number; change?: string };
  lines?: CompareLine[];
  verdict?: { text?: string; change?: string };
}

/** The `comparison` of a re-profile's `torchtriage/profileReport` payload. */
export interface ProfileComparison {
  comparePath: string;
  previousReportPath: string;
  verdict: string;
  document: CompareDocument;
}

/** The `torchtriage.compare` arguments for "this document's last profile against the one before it". */
export function compareArguments(uri: string): [{ uri: string; baseline: "last" }] {
  return [{ uri, baseline: "last" }];
}

/**
 * Each hot line of the newer run with its change, keyed by `lineKey(path, line)` in that run
 * (the same keys as the newer report.json's hotspots).
 */
export function lineDeltas(document: CompareDocument | undefined): Map<string, LineDelta> {
  const deltas = new Map<string, LineDelta>();
  for (const row of document?.lines ?? []) {
    const after = row?.after;
    if (!after?.hot || typeof after.path !== "string" || typeof after.line !== "number") continue;
    if (typeof row.delta_ms !== "number" || !Number.isFinite(row.delta_ms)) continue;
    deltas.set(lineKey(after.path, after.line), { deltaMs: row.delta_ms, measurable: row.measurable === true });
  }
  return deltas;
}

/** The newer run's report.html (its "Compared with" section is the comparison), if the document names the run. */
export function newerReportHtml(document: CompareDocument): string | undefined {
  const after = document.after;
  if (typeof after?.run_dir === "string" && after.run_dir) return path.join(after.run_dir, "report.html");
  if (typeof after?.report === "string" && after.report) return path.join(path.dirname(after.report), "report.html");
  return undefined;
}

/** `torchtriage: train.py since 20261123-075922-train: data loading 52% → 22%, …` (plus the first warning). */
export function compareMessage(document: CompareDocument, name: string): string {
  const text = document.verdict?.text?.trim() || "compared (no verdict in compare.json)";
  const before = document.before?.run_dir ? runName(document.before.run_dir) : "the previous run";
  const warning = document.warnings?.length ? ` (${document.warnings[0]})` : "";
  return `torchtriage: ${name} since ${before}: ${text}${warning}`;
}

/**
 * A run folder's name as a person knows it: the editor's runs are `<folder>/run`
 * (the language server's layout), so `run` is named by its parent.
 */
export function runName(runDir: string): string {
  const parts = runDir.replace(/\\/g, "/").replace(/\/+$/, "").split("/");
  const last = parts[parts.length - 1] ?? runDir;
  return /^(run|rank\d+)$/.test(last) && parts.length > 1 ? `${parts[parts.length - 2]}/${last}` : last;
}

/** Whether `reportPath` is the newer run of `document` (then its deltas belong on the lines drawn from it). */
export function isNewerRun(document: CompareDocument, reportPath: string): boolean {
  const after = document.after?.report;
  return typeof after === "string" && path.resolve(after) === path.resolve(reportPath);
}
