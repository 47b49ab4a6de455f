/**
 * Multi-process profiles (`torchtriage.profile {uri, nprocPerNode, rank}`, run
 * under torchrun): the inputs asked for, the command's argument, and the ranks of
 * a combined report.json (`ranks.per_rank`, report.json 1.2) offered by "Show
 * another rank…".  Pure: no 'vscode'.
 */
import { categoryLabel } from "./hotLines";

/** The CLI refuses more than twice the usable cores, and at most 64; the editor checks the hard limit only. */
export const MAX_PROCESSES = 64;
export const DEFAULT_PROCESSES = 2;

export interface ProfileTarget {
  /** A cell URI or code-cell index: profile the notebook's code cells up to it. */
  cell?: string | number;
  /** Run under torchrun with this many processes on this node. */
  nprocPerNode?: number;
  /** With nprocPerNode: the rank whose lines are annotated (default 0). */
  rank?: number;
}

/** The `torchtriage.profile` argument: the bare URI, or `{uri, cell?, nprocPerNode?, rank?}`. */
export function profileArgument(uri: string, target: ProfileTarget = {}): string | Record<string, string | number> {
  const argument: Record<string, string | number> = { uri };
  if (target.cell !== undefined) argument.cell = target.cell;
  if (target.nprocPerNode !== undefined) {
    argument.nprocPerNode = target.nprocPerNode;
    argument.rank = target.rank ?? 0;
  }
  return Object.keys(argument).length === 1 ? uri : argument;
}

function wholeNumber(text: string): number | undefined {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : undefined;
}

/** An input box's check of "processes per node": undefined when valid, else why not. */
export function processCountError(text: string): string | undefined {
  const value = wholeNumber(text);
  if (value === undefined) return "a whole number of processes, e.g. 2";
  if (value < 1 || value > MAX_PROCESSES) return `from 1 to ${MAX_PROCESSES} processes`;
  return undefined;
}

/** The number in a validated input. */
export function parseWhole(text: string): number {
  return Number(text.trim());
}

/** ` · rank 1 of 0–1` for the status bar; "" for a single-process run. */
export function rankSuffix(rank: number | null | undefined, ranks: number[] | undefined): string {
  if (rank === null || rank === undefined || !ranks || ranks.length === 0) return "";
  const sorted = [...ranks].sort((a, b) => a - b);
  const span = sorted.length === 1 ? `${sorted[0]}` : `${sorted[0]}\u2013${sorted[sorted.length - 1]}`;
  return ` · rank ${rank} of ${span}`;
}

export interface RankEntry {
  rank?: number;
  status?: { status?: string; message?: string | null };
  step_time_ms?: number;
  busy_ms?: number | null;
  bottleneck?: string;
  report?: string | null;
  html?: string | null;
}

export interface RanksSection {
  shown_rank?: number;
  covered?: number[];
  per_rank?: RankEntry[];
  stragglers?: { rank?: number; gap_ms?: number }[];
}

export interface RankChoice {
  rank: number;
  label: string;
  description: string;
  /** The rank's own report.json and report.html (null when the rank wrote none). */
  report: string | null;
  html: string | null;
}

/** The ranks of a combined report that can be shown, in rank order, each described by its numbers. */
export function rankChoices(section: RanksSection | undefined, shownNow: number | null | undefined): RankChoice[] {
  const stragglers = new Map((section?.stragglers ?? []).filter((s) => typeof s.rank === "number").map((s) => [s.rank as number, s]));
  const entries = (section?.per_rank ?? []).filter((e) => typeof e?.rank === "number");
  entries.sort((a, b) => (a.rank as number) - (b.rank as number));
  return entries.map((e) => {
    const rank = e.rank as number;
    const parts: string[] = [];
    if (typeof e.step_time_ms === "number") parts.push(`step ${e.step_time_ms.toFixed(1)} ms`);
    if (typeof e.busy_ms === "number") parts.push(`busy ${e.busy_ms.toFixed(1)} ms`);
    if (e.bottleneck) parts.push(categoryLabel(e.bottleneck));
    const straggler = stragglers.get(rank);
    if (straggler) parts.push(`straggler${typeof straggler.gap_ms === "number" ? ` (+${straggler.gap_ms.toFixed(1)} ms)` : ""}`);
    if (e.status?.status && e.status.status !== "completed" && e.status.status !== "stopped_after_window") parts.push(e.status.status.replace(/_/g, " "));
    if (!e.report) parts.push("no report");
    return {
      rank,
      label: `rank ${rank}${rank === shownNow ? " (shown)" : ""}`,
      description: parts.join(" · "),
      report: e.report ?? null,
      html: e.html ?? null,
    };
  });
}
