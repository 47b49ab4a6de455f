/**
 * A hot line's change since the previous profile, written the way the language
 * server writes it in its hints (lsp/comparison.py `delta_label`, runtime
 * compare's `ms`): `(−30 ms)`, `(+1.2 ms)`, or `(no change)` within the spread.
 * Pure: no 'vscode'.
 */

export interface LineDelta {
  /** after − before, ms per step. */
  deltaMs: number;
  /** Larger than the runs' spread (compare.json `measurable`). */
  measurable: boolean;
}

export const NO_CHANGE = "no change";

/** Milliseconds with the digits that matter: 48, 4.8, 0.48 (absolute value). */
export function formatMs(value: number): string {
  const v = Math.abs(value);
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2);
}

/** `(−30 ms)`, `(+1.2 ms)`, or `(no change)` when the change is within the spread. */
export function deltaLabel(delta: LineDelta): string {
  if (!delta.measurable) return `(${NO_CHANGE})`;
  const sign = delta.deltaMs > 0 ? "+" : "\u2212";
  return `(${sign}${formatMs(delta.deltaMs)} ms)`;
}

/** The hover sentence for a delta: `−30 ms/step since the previous profile` / `no measurable change since …`. */
export function deltaSentence(delta: LineDelta): string {
  if (!delta.measurable) return `No measurable change since the previous profile (${delta.deltaMs > 0 ? "+" : "\u2212"}${formatMs(delta.deltaMs)} ms/step, within the spread)`;
  return `${delta.deltaMs > 0 ? "+" : "\u2212"}${formatMs(delta.deltaMs)} ms/step since the previous profile`;
}
