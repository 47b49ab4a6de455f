/**
 * The `torchtriage/verifyReport` payload (verify.json with `uri` and `verifyJson`, returned by the
 * `torchtriage.verifyFixes` command) -> one line per fix, the result message and the log lines.
 * Pure: no 'vscode'.
 */

export interface VerifyInterval {
  method: string;
  confidence: number;
  low_ms: number;
  high_ms: number;
}

export interface VerifyLosses {
  compared: number;
  max_relative_diff: number | null;
  tolerance: number;
  changed: boolean;
  first_changed: number | null;
}

export interface VerifyFix {
  code: string;
  line: number;
  title: string;
  source: string;
  status: string;
  message: string;
  before_ms: number | null;
  after_ms: number | null;
  delta_ms: number | null;
  speedup: number | null;
  change: string;
  interval: VerifyInterval | null;
  helps: boolean;
  verdict: string;
  losses: VerifyLosses | null;
  diff: string;
}

export interface VerifyReportPayload {
  uri: string;
  verifyJson: string;
  script: string;
  repeat: number;
  baseline: { status: string; message: string; step_time_ms: number | null; bottleneck: string | null };
  candidates: number;
  fixes: VerifyFix[];
  combined: VerifyFix | null;
  kept: { code: string; line: number }[];
  warnings: string[];
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** `41.1`, `9.0`, `120` (ms). */
export function ms(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1);
}

/** A change in ms with its sign: `−43`, `+1.6`, `0`. */
export function signedMs(value: number): string {
  const magnitude = Math.abs(value);
  const text = magnitude >= 10 ? magnitude.toFixed(0) : magnitude.toFixed(1);
  if (Number(text) === 0) return "0";
  return `${value < 0 ? "−" : "+"}${text}`;
}

/** Where a fix is: `TT302 line 28`, or `TT302+TTR302 together` for the combination. */
export function fixName(fix: VerifyFix): string {
  return fix.source === "combined" || !fix.line ? `${fix.code} together` : `${fix.code} line ${fix.line}`;
}

/** `TT302 line 28: 41.1 → 9.0 ms, faster ×4.6 (95% interval −43 to −20 ms)`, or why it has no numbers. */
export function fixLine(fix: VerifyFix): string {
  const name = fixName(fix);
  if (fix.status !== "measured" || !finite(fix.before_ms) || !finite(fix.after_ms)) {
    return `${name}: not measured${fix.message ? ` (${fix.message})` : ""}`;
  }
  let text = `${name}: ${ms(fix.before_ms)} → ${ms(fix.after_ms)} ms, `;
  if (fix.change === "faster") text += finite(fix.speedup) ? `faster ×${fix.speedup.toFixed(1)}` : "faster";
  else if (fix.change === "slower") text += finite(fix.speedup) && fix.speedup > 0 ? `slower ×${(1 / fix.speedup).toFixed(1)}` : "slower";
  else if (fix.change === "none") text += "no measurable change";
  else text += fix.change.replace(/_/g, " ");
  const interval = fix.interval;
  if (interval && finite(interval.low_ms) && finite(interval.high_ms)) {
    text += ` (${Math.round((interval.confidence ?? 0.95) * 100)}% interval ${signedMs(interval.low_ms)} to ${signedMs(interval.high_ms)} ms)`;
  }
  if (fix.losses?.changed) text += ", changes the loss";
  return text;
}

/** What *Apply* writes, as `fix --verify --apply` chooses: the combination when it helps, else the fastest fix that helps. */
export function chosenFix(payload: VerifyReportPayload): VerifyFix | undefined {
  if (payload.combined?.helps) return payload.combined;
  let best: VerifyFix | undefined;
  for (const fix of payload.fixes) {
    if (fix.helps && (!best || (fix.speedup ?? 0) > (best.speedup ?? 0))) best = fix;
  }
  return best;
}

/** Every measured version in order: each fix, then the combination. */
export function allFixes(payload: VerifyReportPayload): VerifyFix[] {
  return payload.combined ? [...payload.fixes, payload.combined] : payload.fixes;
}

/**
 * The message after a verification: the headline, each fix's line, what *Apply* writes, the warnings.
 * `torchtriage fix --verify (train.py, 41.1 ms/step): TT302 helps. TT302 line 28: 41.1 → 9.0 ms, faster ×4.6 (…); …`
 */
export function verifyMessage(payload: VerifyReportPayload, name: string): string {
  const step = payload.baseline.step_time_ms;
  if (!finite(step)) {
    const why = [payload.baseline.status, payload.baseline.message].filter((s) => s).join(": ");
    return `torchtriage fix --verify (${name}): the script as it is did not record its steps${why ? ` (${why})` : ""}, so no fix was measured.`;
  }
  const head = `torchtriage fix --verify (${name}, ${ms(step)} ms/step)`;
  const fixes = allFixes(payload);
  if (!fixes.length) return `${head}: no fix to verify (no quick fix or mechanical advice for this script).`;
  const chosen = chosenFix(payload);
  const verdict = chosen
    ? `${fixName(chosen)} makes the step faster (×${(chosen.speedup ?? 1).toFixed(1)}); Apply writes it.`
    : "no fix makes the step measurably faster; nothing to apply.";
  let text = `${head}: ${verdict} ${fixes.map(fixLine).join("; ")}.`;
  if (payload.warnings.length) text += ` Warnings: ${payload.warnings.join(" ")}`;
  return text;
}

/** The output channel's lines: each fix with its verdict sentence, the warnings, the diff of what Apply writes. */
export function verifyLogLines(payload: VerifyReportPayload): string[] {
  const lines = allFixes(payload).map((fix) => `${fixLine(fix)}${fix.verdict ? ` — ${fix.verdict}` : ""}`);
  for (const warning of payload.warnings) lines.push(`warning: ${warning}`);
  const chosen = chosenFix(payload);
  if (chosen?.diff) lines.push(...chosen.diff.trimEnd().split("\n"));
  return lines;
}
