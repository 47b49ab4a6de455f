import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import { CompareDocument, compareArguments, compareMessage, isNewerRun, lineDeltas, newerReportHtml, runName } from "../../src/pure/compare";
import { deltaLabel, formatMs } from "../../src/pure/delta";
import { Report, hotLinesFor, hotLinesFromPayload, lineKey, withDeltas } from "../../src/pure/hotLines";

// Trimmed from a real `torchtriage compare` of two profiles of tests/lsp/data/tiny_train.py (the second with
// two lines inserted above the loop), keeping the fields the extension reads.
const side = (line: number, ms: number, hot = true) => ({ path: "/w/tiny_train.py", line, hot, ms_per_step: ms, share: 0.5, category: "compute" });
const document: CompareDocument = {
  schema_version: "1.0",
  before: { run_dir: "/tmp/torchtriage-profile-a1/run", report: "/tmp/torchtriage-profile-a1/run/report.json", script: "/w/tiny_train.py" },
  after: { run_dir: "/tmp/torchtriage-profile-b2/run", report: "/tmp/torchtriage-profile-b2/run/report.json", script: "/w/tiny_train.py" },
  warnings: [],
  lines: [
    { match: "moved", before: side(13, 39.8), after: side(15, 9.8), delta_ms: -30.0, measurable: true },
    { match: "moved", before: side(15, 0.63), after: side(17, 2.59), delta_ms: 1.96, measurable: false },
    { match: "removed", before: side(20, 1), after: null, delta_ms: -1, measurable: true },
    { match: "same", before: side(3, 0), after: side(3, 0, false), delta_ms: 0, measurable: false }, // not hot after: no label
  ],
  verdict: { text: "compute 65% → 51%, step 44 → 14 ms: 3.1× faster", change: "faster" },
};

test("the delta reads like the server's hint: sign, digits that matter, (no change) within the spread", () => {
  assert.equal(deltaLabel({ deltaMs: -30.04, measurable: true }), "(\u221230 ms)");
  assert.equal(deltaLabel({ deltaMs: 1.234, measurable: true }), "(+1.2 ms)");
  assert.equal(deltaLabel({ deltaMs: 0.456, measurable: true }), "(+0.46 ms)");
  assert.equal(deltaLabel({ deltaMs: 8.9, measurable: false }), "(no change)");
  assert.deepEqual([48.4, 4.84, 0.484, -12].map(formatMs), ["48", "4.8", "0.48", "12"]);
});

test("line deltas: the newer run's hot lines only, by their path and line in that run", () => {
  const deltas = lineDeltas(document);
  assert.deepEqual([...deltas.keys()].sort(), [lineKey("/w/tiny_train.py", 15), lineKey("/w/tiny_train.py", 17)].sort());
  assert.deepEqual(deltas.get(lineKey("/w/tiny_train.py", 15)), { deltaMs: -30, measurable: true });
  assert.equal(lineDeltas(undefined).size, 0);
  assert.equal(lineDeltas({ lines: [{ after: { path: "/w/t.py", line: 2, hot: true } }] }).size, 0); // no delta_ms: nothing made up
});

test("a re-profile's labels and hovers carry each line's change", () => {
  const report: Report = {
    step_time_ms: 14,
    steps_profiled: 5,
    hotspots: [
      { path: "/w/tiny_train.py", line: 15, self_ms_per_step: 9.8, share: 0.7, category: "compute" },
      { path: "/w/tiny_train.py", line: 17, self_ms_per_step: 2.59, share: 0.18, category: "python_overhead" },
      { path: "/w/tiny_train.py", line: 12, self_ms_per_step: 1, share: 0.07, category: "idle" },
    ],
  };
  const lines = hotLinesFor(report, "/w/tiny_train.py", lineDeltas(document));
  assert.deepEqual(lines.map((l) => l.label), [
    "70% · 9.8 ms/step (\u221230 ms) · compute",
    "18% · 2.6 ms/step (no change) · Python overhead",
    "7% · 1.0 ms/step · idle", // a line the comparison does not list keeps the plain label
  ]);
  assert.match(lines[0].hover, /\u221230 ms\/step since the previous profile/);
  assert.match(lines[1].hover, /No measurable change since the previous profile \(\+2.0 ms\/step, within the spread\)/);
  assert.equal(hotLinesFor(report, "/w/tiny_train.py")[0].label, "70% · 9.8 ms/step · compute"); // first profile: no delta
});

test("notebook cells take the change from the payload, measurable unless the server's label says (no change)", () => {
  const cell = "vscode-notebook-cell:/w/nb.ipynb#W1sZmlsZQ%3D%3D";
  const byCell = hotLinesFromPayload([
    { uri: cell, line: 4, share: 0.6, msPerStep: 12.1, category: "data_loading", label: "▮▮▮▮▮▮ 60% · 12.1 ms/step (\u221230 ms) · data wait", deltaMsPerStep: -30.2 },
    { uri: cell, line: 2, share: 0.2, msPerStep: 3, category: "compute", label: "▮▮ 20% · 3.0 ms/step (no change) · compute", deltaMsPerStep: 0.4 },
    { uri: cell, line: 6, share: 0.1, msPerStep: 1, category: "idle", label: "▮ 10% · 1.0 ms/step · idle", deltaMsPerStep: null },
  ]);
  assert.deepEqual(byCell.get(cell)!.map((l) => l.label), [
    "60% · 12.1 ms/step (\u221230 ms) · data wait",
    "20% · 3.0 ms/step (no change) · compute",
    "10% · 1.0 ms/step · idle",
  ]);
});

test("compare: the command's argument, the newer report.html, the verdict message", () => {
  assert.deepEqual(compareArguments("file:///w/tiny_train.py"), [{ uri: "file:///w/tiny_train.py", baseline: "last" }]);
  assert.equal(newerReportHtml(document), path.join("/tmp/torchtriage-profile-b2/run", "report.html"));
  assert.equal(newerReportHtml({ after: { report: "/r/b/report.json" } }), path.join("/r/b", "report.html"));
  assert.equal(newerReportHtml({}), undefined);
  assert.equal(
    compareMessage(document, "tiny_train.py"),
    "torchtriage: tiny_train.py since torchtriage-profile-a1/run: compute 65% → 51%, step 44 → 14 ms: 3.1× faster",
  );
  assert.equal(
    compareMessage({ ...document, before: { run_dir: "/runs/20261123-075922-train" }, warnings: ["different scripts"] }, "t.py"),
    "torchtriage: t.py since 20261123-075922-train: compute 65% → 51%, step 44 → 14 ms: 3.1× faster (different scripts)",
  );
  assert.match(compareMessage({}, "t.py"), /since the previous run: compared \(no verdict in compare.json\)/);
  assert.equal(runName("/runs/x/rank1"), "x/rank1");
});

test("a comparison's deltas belong to the drawn run only when it is the newer run", () => {
  assert.equal(isNewerRun(document, "/tmp/torchtriage-profile-b2/run/report.json"), true);
  assert.equal(isNewerRun(document, "/tmp/torchtriage-profile-b2/run/../run/report.json"), true);
  assert.equal(isNewerRun(document, "/tmp/torchtriage-profile-a1/run/report.json"), false);
  assert.equal(isNewerRun({}, "/x/report.json"), false);
});

test("a comparison made after the profile adds the changes to lines already drawn, where edits moved them", () => {
  const report: Report = {
    hotspots: [
      { path: "/w/tiny_train.py", line: 15, self_ms_per_step: 9.8, share: 0.7, category: "compute", function: "main" },
      { path: "/w/tiny_train.py", line: 12, self_ms_per_step: 1, share: 0.07, category: "idle" },
    ],
  };
  const drawn = hotLinesFor(report, "/w/tiny_train.py").map((l) => ({ ...l, line: l.line + 3 })); // three lines typed above since
  const updated = withDeltas(drawn, "/w/tiny_train.py", lineDeltas(document));
  assert.deepEqual(updated.map((l) => [l.line, l.label]), [
    [17, "70% · 9.8 ms/step (\u221230 ms) · compute"],
    [14, "7% · 1.0 ms/step · idle"],
  ]);
  assert.deepEqual(updated[0].hover.split("\n\n").slice(0, 3), [
    "**torchtriage profile** — 70% of the step, 9.8 ms/step, mostly compute",
    "\u221230 ms/step since the previous profile",
    "in `main`",
  ]);
  assert.equal(updated[1], drawn[1]); // not in the comparison: the same object
  // Applied twice (the same comparison again), the hover keeps one sentence.
  assert.equal(withDeltas(updated, "/w/tiny_train.py", lineDeltas(document))[0].hover.match(/since the previous profile/g)!.length, 1);
});
