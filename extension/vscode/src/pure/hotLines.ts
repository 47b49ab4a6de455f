/**
 * A profile report (report.json, schema 1.x) -> what the editor draws on one file:
 * per hot line an after-line label (`38% · 12.1 ms/step · data wait`; after a
 * re-profile with the change, `12.1 ms/step (−30 ms)`), a heat level and colour
 * scaled by share, and a hover with the line's breakdown and the static findings
 * it confirms; plus the status-bar verdict.  Pure: no 'vscode'.
 */
import { LineDelta, NO_CHANGE, deltaLabel, deltaSentence } from "./delta";

export interface Hotspot {
  path?: string;
  line?: number;
  function?: string;
  source?: string;
  self_ms_per_step?: number;
  share?: number;
  category?: string;
  top_names?: string[];
  detail?: string;
  static_codes?: string[];
}

export interface Report {
  script?: string;
  step_time_ms?: number;
  steps_profiled?: number;
  bottleneck?: { kind?: string; share?: number; recommendations?: { action?: string }[] };
  hotspots?: Hotspot[];
  static_findings?: { code?: string; name?: string; path?: string; line?: number; end_line?: number; message?: string }[];
  trace?: { chrome_traces?: string[] };
  status?: { status?: string; message?: string };
}

export interface HotLine {
  /** 0-based line in the document. */
  line: number;
  share: number;
  msPerStep: number;
  category: string;
  label: string;
  /** 0..HEAT_LEVELS-1 */
  heat: number;
  hover: string;
  /** The 1-based line in the report it was drawn from (`line` moves with edits, this does not). */
  reportLine?: number;
}

export const HEAT_LEVELS = 5;
export const MAX_HOT_LINES = 10;

const CATEGORY: Record<string, string> = {
  data_loading: "data wait",
  host_sync: "host sync",
  python_overhead: "Python overhead",
  launch_overhead: "launch overhead",
  compute: "compute",
  optimizer: "optimizer",
  communication: "communication",
  idle: "idle",
  memory_growth: "memory growth",
  none: "no clear bottleneck",
};

export function categoryLabel(category: string | undefined): string {
  if (!category) return "unknown";
  return CATEGORY[category] ?? category.replace(/_/g, " ");
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

export function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** `38% · 12.1 ms/step · data wait`; with `delta` (since the previous profile) `38% · 12.1 ms/step (−30 ms) · data wait`. */
export function afterLineLabel(share: number, msPerStep: number, category: string | undefined, delta?: LineDelta): string {
  const change = delta ? ` ${deltaLabel(delta)}` : "";
  return `${percent(share)} · ${msPerStep.toFixed(1)} ms/step${change} · ${categoryLabel(category)}`;
}

/** Heat level: 0 below 5 % of the step, HEAT_LEVELS-1 from 40 %. */
export function heatLevel(share: number): number {
  const bounds = [0.05, 0.1, 0.2, 0.4];
  let level = 0;
  for (const bound of bounds) if (share >= bound) level++;
  return Math.min(level, HEAT_LEVELS - 1);
}

/** Colour of a heat level: yellow (cool) to red (hot), more opaque when hotter. */
export function heatColor(level: number): string {
  const hues = [55, 45, 32, 18, 0];
  const alpha = [0.35, 0.5, 0.65, 0.8, 0.95];
  const i = Math.max(0, Math.min(HEAT_LEVELS - 1, level));
  return `hsla(${hues[i]}, 90%, 50%, ${alpha[i]})`;
}

/** A path with `/` separators, a lower-case drive letter and no trailing slash. */
export function normalPath(p: string): string {
  return p.replace(/\\/g, "/").replace(/^([a-z]):/i, (_, d: string) => d.toLowerCase() + ":").replace(/\/+$/, "");
}

/** Paths compare equal after normalising separators and a trailing case-insensitive drive letter. */
export function samePath(a: string, b: string): boolean {
  return normalPath(a) === normalPath(b);
}

/** The key of a (path, 1-based line) in a map of line deltas (see pure/compare `lineDeltas`). */
export function lineKey(path: string, line1: number): string {
  return `${normalPath(path)}:${line1}`;
}

function hoverText(h: Hotspot, report: Report, fsPath: string, line1: number, delta: LineDelta | undefined, title: string): string {
  const share = num(h.share);
  const ms = num(h.self_ms_per_step);
  const parts = [`**${title}** — ${percent(share)} of the step, ${ms.toFixed(1)} ms/step, mostly ${categoryLabel(h.category)}`];
  if (delta) parts.push(deltaSentence(delta));
  if (h.function) parts.push(`in \`${h.function}\``);
  if (h.top_names && h.top_names.length) parts.push(`Top: ${h.top_names.slice(0, 5).map((n) => `\`${n}\``).join(", ")}`);
  if (h.detail) parts.push(h.detail);
  const codes = new Set(h.static_codes ?? []);
  const findings = (report.static_findings ?? []).filter(
    (f) => f.code && codes.has(f.code) && f.path && samePath(f.path, fsPath) && num(f.line) <= line1 && line1 <= num(f.end_line ?? f.line),
  );
  if (findings.length) {
    for (const f of findings) parts.push(`Confirms **${f.code}**${f.name ? ` (${f.name})` : ""}: ${f.message ?? ""}`);
  } else if (codes.size) {
    parts.push(`Confirms ${[...codes].join(", ")}`);
  }
  const step = num(report.step_time_ms);
  if (step) parts.push(`Mean step ${step.toFixed(1)} ms over ${num(report.steps_profiled)} steps`);
  return parts.join("\n\n");
}

/**
 * The hot lines of `fsPath` in a report, hottest first (at most MAX_HOT_LINES).
 * `deltas` (keyed by `lineKey` of the report's path and line): each line's change since the previous profile.
 * `title` starts the hover (e.g. `torchtriage profile, rank 1`).
 */
export function hotLinesFor(report: Report, fsPath: string, deltas?: Map<string, LineDelta>, title = "torchtriage profile"): HotLine[] {
  const hotspots = (report.hotspots ?? []).filter((h) => h && typeof h.path === "string" && samePath(h.path, fsPath) && num(h.line) >= 1);
  hotspots.sort((a, b) => num(b.share) - num(a.share));
  const byLine = new Map<number, HotLine>();
  for (const h of hotspots) {
    const line1 = num(h.line);
    if (byLine.has(line1 - 1) || byLine.size >= MAX_HOT_LINES) continue;
    const share = num(h.share);
    const ms = num(h.self_ms_per_step);
    const delta = deltas?.get(lineKey(h.path as string, line1));
    byLine.set(line1 - 1, {
      line: line1 - 1,
      share,
      msPerStep: ms,
      category: h.category ?? "",
      label: afterLineLabel(share, ms, h.category, delta),
      heat: heatLevel(share),
      hover: hoverText(h, report, fsPath, line1, delta, title),
      reportLine: line1,
    });
  }
  return [...byLine.values()];
}

/**
 * Hot lines already drawn (and perhaps moved by edits since) with the changes of a comparison made
 * afterwards: the label gets the change, the hover its sentence after the first paragraph.
 * Lines the comparison does not list are returned as they are.
 */
export function withDeltas(lines: HotLine[], fsPath: string, deltas: Map<string, LineDelta>): HotLine[] {
  return lines.map((l) => {
    const delta = l.reportLine !== undefined ? deltas.get(lineKey(fsPath, l.reportLine)) : undefined;
    if (!delta) return l;
    const [first, ...rest] = l.hover.split("\n\n");
    const kept = rest.filter((p) => !/since the previous profile/.test(p));
    return { ...l, label: afterLineLabel(l.share, l.msPerStep, l.category, delta), hover: [first, deltaSentence(delta), ...kept].join("\n\n") };
  });
}

export interface Summary {
  bottleneck: string;
  share: number;
  stepTimeMs: number;
}

/** Status-bar text for a `torchtriage/profileReport` summary. */
export function verdictText(summary: Summary): string {
  if (!summary.bottleneck || summary.bottleneck === "none" || summary.bottleneck === "unknown") {
    return `torchtriage: ${categoryLabel(summary.bottleneck)} · ${summary.stepTimeMs.toFixed(1)} ms/step`;
  }
  return `torchtriage: ${categoryLabel(summary.bottleneck)} bound ${percent(summary.share)} · ${summary.stepTimeMs.toFixed(1)} ms/step`;
}

/** One entry of the `hotLines` list in a `torchtriage/profileReport` payload (1-based line). */
export interface PayloadHotLine {
  uri: string;
  line: number;
  share: number;
  msPerStep: number;
  category: string;
  label?: string;
  codes?: string[];
  /** The line's change since the previous profile (ms per step); null or absent without one. */
  deltaMsPerStep?: number | null;
}

/** A payload hot line's delta: its `deltaMsPerStep`, measurable unless the server's label says `(no change)`. */
export function payloadDelta(h: PayloadHotLine): LineDelta | undefined {
  if (typeof h.deltaMsPerStep !== "number" || !Number.isFinite(h.deltaMsPerStep)) return undefined;
  return { deltaMs: h.deltaMsPerStep, measurable: !(h.label ?? "").includes(`(${NO_CHANGE})`) };
}

/**
 * The payload's hot lines grouped by document URI (as given; callers normalise it),
 * hottest first, at most MAX_HOT_LINES per document.  Used for notebook cells,
 * whose lines the server has already mapped from the joined script back to cells.
 */
export function hotLinesFromPayload(lines: PayloadHotLine[] | undefined): Map<string, HotLine[]> {
  const result = new Map<string, HotLine[]>();
  const sorted = [...(lines ?? [])].filter((h) => h && typeof h.uri === "string" && num(h.line) >= 1);
  sorted.sort((a, b) => num(b.share) - num(a.share));
  for (const h of sorted) {
    const list = result.get(h.uri) ?? [];
    if (list.length >= MAX_HOT_LINES || list.some((l) => l.line === h.line - 1)) continue;
    const share = num(h.share);
    const ms = num(h.msPerStep);
    const delta = payloadDelta(h);
    const parts = [`**torchtriage profile** — ${percent(share)} of the step, ${ms.toFixed(1)} ms/step, mostly ${categoryLabel(h.category)}`];
    if (delta) parts.push(deltaSentence(delta));
    if (h.codes && h.codes.length) parts.push(`Confirms ${h.codes.join(", ")}`);
    list.push({
      line: h.line - 1,
      share,
      msPerStep: ms,
      category: h.category ?? "",
      label: afterLineLabel(share, ms, h.category, delta),
      heat: heatLevel(share),
      hover: parts.join("\n\n"),
    });
    result.set(h.uri, list);
  }
  return result;
}
