/**
 * The `torchtriage/labReport` payload (lab.json in brief, returned by the
 * `torchtriage.lab` command) -> the verdict message and the rows as text for the
 * output channel.  Pure: no 'vscode'.
 */

export interface LabRow {
  name: string;
  status: string;
  reason: string | null;
  message: string;
  medianMs: number | null;
  iqrMs: number | null;
  speedupVsFp32: number | null;
  change: string | null;
  samplesPerS: number | null;
  peakMemoryBytes: number | null;
  compileS: number | null;
  graphBreaks: number | null;
  recompiles: number | null;
  outputDtype: string | null;
  finalLoss: number | null;
  lossCheck: string | null;
}

export interface LabReportPayload {
  uri: string;
  labPath: string;
  htmlPath: string | null;
  device: string | null;
  /** lab.json `reading.verdict`: take_both, take_low_precision, take_compile, neither_helps, incomplete. */
  verdict: string;
  /** lab.json `reading.lines[].text`: the sentences under the table, the fastest configuration last. */
  reading: string[];
  rows: LabRow[];
}

const VERDICT: Record<string, string> = {
  take_both: "take both lower precision and torch.compile",
  take_low_precision: "take lower precision",
  take_compile: "take torch.compile",
  neither_helps: "neither lower precision nor torch.compile helps measurably",
  incomplete: "incomplete (a configuration has no numbers)",
};

/** The lab's verdict key in words (an unknown key with its underscores as spaces). */
export function verdictWords(verdict: string | undefined): string {
  if (!verdict) return "no verdict";
  return VERDICT[verdict] ?? verdict.replace(/_/g, " ");
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** `bf16+compile: 153.46 ms/step, 1.38× vs fp32 (within the spread)` or `bf16+compile: failed (compile_failed: …)`. */
export function rowText(row: LabRow): string {
  if (row.status !== "measured" || !finite(row.medianMs)) {
    const why = [row.reason, row.message].filter((s) => s).join(": ");
    return `${row.name}: ${row.status.replace(/_/g, " ")}${why ? ` (${why})` : ""}`;
  }
  let text = `${row.name}: ${row.medianMs.toFixed(2)} ms/step`;
  if (finite(row.iqrMs)) text += ` (IQR ${row.iqrMs.toFixed(2)})`;
  if (finite(row.speedupVsFp32) && row.name !== "fp32") {
    text += `, ${row.speedupVsFp32.toFixed(2)}× vs fp32`;
    if (row.change === "no_measurable_change") text += " (within the spread)";
  }
  if (finite(row.compileS)) text += `, compile ${row.compileS.toFixed(1)} s`;
  if (row.lossCheck === "outside_tolerance" || row.lossCheck === "not_finite") text += `, loss ${row.lossCheck.replace(/_/g, " ")}`;
  if (row.status === "measured" && row.message) text += ` — ${row.message}`;
  return text;
}

/**
 * The information message after a lab: `torchtriage lab (slow_loader.py on cpu): neither … helps measurably.
 * No configuration is measurably faster than fp32 as written (211.83 ms/step).`
 */
export function labMessage(payload: LabReportPayload, name: string): string {
  const where = payload.device ? `${name} on ${payload.device}` : name;
  const last = payload.reading.length ? payload.reading[payload.reading.length - 1].replace(/^[•\s]+/, "") : "";
  const failed = payload.rows.filter((r) => r.status === "failed").map((r) => r.name);
  const failures = failed.length ? ` Failed: ${failed.join(", ")} (see the lab report).` : "";
  return `torchtriage lab (${where}): ${verdictWords(payload.verdict)}.${last ? ` ${last}` : ""}${failures}`;
}

/** What goes to the output channel: each row, then the reading. */
export function labLogLines(payload: LabReportPayload): string[] {
  return [...payload.rows.map(rowText), ...payload.reading.map((line) => `• ${line}`)];
}
