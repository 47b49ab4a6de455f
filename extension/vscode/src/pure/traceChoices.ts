/**
 * "Open a trace…" without a target: the traces found in the workspace, offered in a quick pick before
 * the open dialogs.  A folder holding several trace files (a `tensorboard_trace_handler` logdir: one file
 * per worker or rank and profiling cycle) is one choice, the folder `torchtriage analyze` takes; a trace
 * alone in its folder is a choice of its own.  Newest first.  Pure: no 'vscode'.
 */

/** `workspace.findFiles`'s include: torch.profiler's `*.pt.trace.json(.gz)`, and chrome traces named `*trace*.json(.gz)`. */
export const TRACE_GLOB = "**/*trace*.{json,json.gz}";

/** `workspace.findFiles`'s exclude: dependencies, version control, and torchtriage's own runs (their traces have their reports). */
export const TRACE_EXCLUDE = "**/{node_modules,.git,.torchtriage,.venv,venv,site-packages,__pycache__}/**";

/** At most this many trace files are looked for: the quick pick is for finding a recent one, not a listing. */
export const MAX_TRACES = 200;

/** A trace file found in the workspace: its path relative to the workspace, its size, and when it was written (ms; 0 unknown). */
export interface FoundTrace {
  relativePath: string;
  size: number;
  mtime: number;
}

/** One choice of the quick pick: a folder of several trace files, or a trace file alone in its folder. */
export interface TraceChoice<T extends FoundTrace> {
  kind: "folder" | "file";
  /** The folder's or the file's path relative to the workspace ("" for the workspace folder itself). */
  relativePath: string;
  label: string;
  description: string;
  /** The found files it stands for (one for a file), newest first. */
  files: T[];
  /** When the newest of them was written: the choices are sorted on it. */
  mtime: number;
}

/** The folder part of a relative path ("" at the workspace's root). */
export function parentPath(relativePath: string): string {
  const slash = Math.max(relativePath.lastIndexOf("/"), relativePath.lastIndexOf("\\"));
  return slash < 0 ? "" : relativePath.slice(0, slash);
}

/** A file size for a quick pick's description: `812 B`, `4.5 KiB`, `35.1 MiB`, `1.2 GiB`. */
export function sizeText(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** How long ago `mtime` was, coarsely (`just now`, `5 min ago`, `3 h ago`, `2 days ago`, `4 months ago`); "" when unknown. */
export function ageText(mtime: number, now: number): string {
  if (!mtime) return "";
  const minutes = Math.floor(Math.max(0, now - mtime) / 60_000);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"} ago`;
  if (minutes < 1) return "just now";
  if (hours < 1) return `${minutes} min ago`;
  if (days < 1) return `${hours} h ago`;
  if (days < 60) return plural(days, "day");
  if (days < 730) return plural(Math.floor(days / 30), "month");
  return plural(Math.floor(days / 365), "year");
}

function joined(parts: string[]): string {
  return parts.filter((part) => part).join(" · ");
}

function folderChoice<T extends FoundTrace>(relativePath: string, files: T[], now: number): TraceChoice<T> {
  const mtime = files[0].mtime;
  return {
    kind: "folder",
    relativePath,
    label: relativePath || "(the workspace folder)",
    description: joined(["folder", `${files.length} trace files`, ageText(mtime, now)]),
    files,
    mtime,
  };
}

function fileChoice<T extends FoundTrace>(file: T, now: number): TraceChoice<T> {
  return {
    kind: "file",
    relativePath: file.relativePath,
    label: file.relativePath,
    description: joined([sizeText(file.size), ageText(file.mtime, now)]),
    files: [file],
    mtime: file.mtime,
  };
}

function newestFirst(a: { mtime: number; relativePath: string }, b: { mtime: number; relativePath: string }): number {
  return b.mtime - a.mtime || a.relativePath.localeCompare(b.relativePath);
}

/**
 * The quick pick's choices for the trace files found: the files that share a folder with another trace
 * grouped into that folder, the others by themselves; newest first (then by path), each list too.
 */
export function traceChoices<T extends FoundTrace>(found: T[], now: number): TraceChoice<T>[] {
  const byFolder = new Map<string, T[]>();
  for (const file of found) {
    const folder = parentPath(file.relativePath);
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), file]);
  }
  const choices: TraceChoice<T>[] = [];
  for (const [folder, files] of byFolder) {
    const sorted = [...files].sort(newestFirst);
    choices.push(sorted.length > 1 ? folderChoice(folder, sorted, now) : fileChoice(sorted[0], now));
  }
  return choices.sort(newestFirst);
}

/** The quick pick's placeholder once the workspace has been searched: what was found, or that nothing was. */
export function tracePickPlaceholder(choices: number, truncated: boolean): string {
  if (choices === 0) return "No trace found in the workspace (*trace*.json, *trace*.json.gz): browse for one";
  const limit = truncated ? ` (the first ${MAX_TRACES} files found)` : "";
  return `A trace in the workspace, newest first${limit}: a folder holds one per worker or rank; or browse`;
}
