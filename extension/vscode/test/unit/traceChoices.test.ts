import assert from "node:assert/strict";
import { test } from "node:test";
import { FoundTrace, MAX_TRACES, TRACE_EXCLUDE, TRACE_GLOB, ageText, parentPath, sizeText, traceChoices, tracePickPlaceholder } from "../../src/pure/traceChoices";

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);
const MIN = 60_000;

/** A found trace written `minutes` before NOW, with an id standing for the host's URI. */
function found(relativePath: string, minutes: number, size = 1024): FoundTrace & { id: string } {
  return { relativePath, size, mtime: NOW - minutes * MIN, id: `file:///w/${relativePath}` };
}

test("the workspace search: trace names of torch.profiler and chrome traces, without dependencies or torchtriage's runs", () => {
  assert.equal(TRACE_GLOB, "**/*trace*.{json,json.gz}"); // *.pt.trace.json(.gz) match it too
  for (const folder of ["node_modules", ".git", ".torchtriage"]) assert.ok(TRACE_EXCLUDE.includes(folder), folder);
  assert.equal(MAX_TRACES, 200);
});

test("the files of a tensorboard_trace_handler folder are one folder choice; a trace alone in its folder is a file choice", () => {
  const choices = traceChoices(
    [
      found("logs/tb/host_1.1700000000123.pt.trace.json.gz", 30, 5 * 1024 * 1024),
      found("logs/tb/host_2.1700000000456.pt.trace.json.gz", 10),
      found("logs/tb/host_3.1700000000789.pt.trace.json.gz", 20),
      found("runs/job.pt.trace.json", 5, 35.1 * 1024 * 1024),
      found("old_trace.json", 3 * 24 * 60, 812),
    ],
    NOW,
  );
  assert.deepEqual(
    choices.map((c) => [c.kind, c.relativePath, c.label, c.description]),
    [
      ["file", "runs/job.pt.trace.json", "runs/job.pt.trace.json", "35.1 MiB · 5 min ago"],
      ["folder", "logs/tb", "logs/tb", "folder · 3 trace files · 10 min ago"],
      ["file", "old_trace.json", "old_trace.json", "812 B · 3 days ago"],
    ],
  );
  // A folder's files, newest first: the host takes the folder as their parent.
  assert.deepEqual(choices[1].files.map((f) => f.id), [
    "file:///w/logs/tb/host_2.1700000000456.pt.trace.json.gz",
    "file:///w/logs/tb/host_3.1700000000789.pt.trace.json.gz",
    "file:///w/logs/tb/host_1.1700000000123.pt.trace.json.gz",
  ]);
  assert.equal(choices[1].mtime, NOW - 10 * MIN);
});

test("traces at the workspace's root form a folder choice of the workspace folder; ties are sorted by path", () => {
  const choices = traceChoices([found("b_trace.json", 1), found("a_trace.json", 1), found("x/rank1/trace.json", 1), found("x/rank0/trace.json", 1)], NOW);
  assert.deepEqual(
    choices.map((c) => [c.kind, c.label, c.description]),
    [
      ["folder", "(the workspace folder)", "folder · 2 trace files · 1 min ago"],
      ["file", "x/rank0/trace.json", "1.0 KiB · 1 min ago"],
      ["file", "x/rank1/trace.json", "1.0 KiB · 1 min ago"],
    ],
  );
  assert.equal(choices[0].relativePath, "");
  assert.deepEqual(traceChoices([], NOW), []);
});

test("a file whose time is unknown says its size only, and sorts last", () => {
  const choices = traceChoices([{ relativePath: "a/trace.json", size: 2048, mtime: 0 }, found("b/trace.json", 90)], NOW);
  assert.deepEqual(choices.map((c) => [c.label, c.description]), [["b/trace.json", "1.0 KiB · 1 h ago"], ["a/trace.json", "2.0 KiB"]]);
});

test("paths, sizes and ages", () => {
  assert.equal(parentPath("logs/tb/x.json"), "logs/tb");
  assert.equal(parentPath("proj\\logs\\x.json"), "proj\\logs"); // a path outside the workspace, on Windows
  assert.equal(parentPath("x.json"), "");
  assert.deepEqual([0, 1023, 1024, 4608, 35.1 * 1024 ** 2, 1.25 * 1024 ** 3].map(sizeText), ["0 B", "1023 B", "1.0 KiB", "4.5 KiB", "35.1 MiB", "1.3 GiB"]);
  const ago = (minutes: number) => ageText(NOW - minutes * MIN, NOW);
  assert.deepEqual(
    [0.5, 1, 59, 60, 23 * 60 + 59, 24 * 60, 2 * 24 * 60, 59 * 24 * 60, 90 * 24 * 60, 800 * 24 * 60].map(ago),
    ["just now", "1 min ago", "59 min ago", "1 h ago", "23 h ago", "1 day ago", "2 days ago", "59 days ago", "3 months ago", "2 years ago"],
  );
  assert.equal(ageText(NOW + 5 * MIN, NOW), "just now"); // a clock ahead of this machine's
  assert.equal(ageText(0, NOW), "");
});

test("the placeholder says what was found, or that nothing was", () => {
  assert.match(tracePickPlaceholder(0, false), /^No trace found in the workspace .*: browse for one$/);
  assert.equal(tracePickPlaceholder(3, false), "A trace in the workspace, newest first: a folder holds one per worker or rank; or browse");
  assert.match(tracePickPlaceholder(150, true), /newest first \(the first 200 files found\):/);
});
