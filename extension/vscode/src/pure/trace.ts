/**
 * "Open a trace…": a torch.profiler trace recorded elsewhere, analysed by the language server
 * (`torchtriage.analyze`) and drawn on the local files its hot lines are on.  Pure: no 'vscode'.
 */
import { HotLine, PayloadHotLine, Report, Summary, categoryLabel, hotLinesFor, hotLinesFromPayload, percent } from "./hotLines";

/** The open dialog's filters: the trace suffixes torch.profiler writes (`.pt.trace.json`, `.json.gz`) end in these. */
export const TRACE_FILTERS: Record<string, string[]> = {
  "PyTorch traces (.json, .json.gz, .pt.trace.json)": ["json", "gz"],
  "All files": ["*"],
};

/** The payload's fields that only an analysed trace has (see the README's `torchtriage/profileReport`). */
export interface TraceFields {
  fromTrace?: boolean;
  tracePath?: string;
  /** The URIs of the local files with hot lines, hottest first. */
  files?: string[];
}

/** A trace's short name: its base name without the trace suffixes (`worker0.1700000000` from `worker0.1700000000.pt.trace.json.gz`). */
export function traceName(fsPath: string): string {
  const base = fsPath.replace(/[\\/]+$/, "").split(/[\\/]/).pop() ?? fsPath;
  return base.replace(/(\.pt\.trace)?\.json(\.gz)?$/i, "") || base;
}

/** The argument of `torchtriage.analyze`. */
export function analyzeArgument(fsPath: string): { path: string } {
  return { path: fsPath };
}

/** One file of the payload: its URI as sent, and its path on disk (the caller parses the URI). */
export interface TraceFile {
  uri: string;
  fsPath: string;
}

/**
 * What to draw per file URI: the report's hot lines of that file (with their breakdown in the hover),
 * else the payload's (the server mapped them onto the editor's text; e.g. a path the report spells otherwise).
 */
export function traceHotLines(report: Report, files: TraceFile[], payloadLines: PayloadHotLine[] | undefined): Map<string, HotLine[]> {
  const fromPayload = hotLinesFromPayload(payloadLines);
  const result = new Map<string, HotLine[]>();
  for (const file of files) {
    const lines = hotLinesFor(report, file.fsPath, undefined, "torchtriage trace");
    const drawn = lines.length ? lines : fromPayload.get(file.uri) ?? [];
    if (drawn.length) result.set(file.uri, drawn);
  }
  return result;
}

/** The message after the analysis: the verdict, and where the hot lines are (or why none is drawn). */
export function traceMessage(name: string, summary: Summary, relativeFiles: string[]): string {
  const verdict =
    !summary.bottleneck || summary.bottleneck === "none" || summary.bottleneck === "unknown"
      ? `${categoryLabel(summary.bottleneck)} · ${summary.stepTimeMs.toFixed(1)} ms/step`
      : `${categoryLabel(summary.bottleneck)} bound ${percent(summary.share)} · ${summary.stepTimeMs.toFixed(1)} ms/step`;
  if (relativeFiles.length === 0) {
    return (
      `torchtriage: trace ${name}: ${verdict}. No hot line is on a file of this workspace: the trace has no Python stacks ` +
      "(record with with_stack=True), or its file names are not found under the workspace folders (open the checkout the job ran)."
    );
  }
  const shown = relativeFiles.slice(0, 3).join(", ") + (relativeFiles.length > 3 ? ` and ${relativeFiles.length - 3} more` : "");
  return `torchtriage: trace ${name}: ${verdict}; hot lines drawn on ${shown}.`;
}

/** The documents whose profile annotations "Clear" asks the server to remove: a trace's files, else the profiled document. */
export function urisToClear(payload: TraceFields & { uri: string }): string[] {
  return payload.fromTrace ? [...(payload.files ?? [])] : [payload.uri];
}
