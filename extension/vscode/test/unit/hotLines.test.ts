import assert from "node:assert/strict";
import { test } from "node:test";
import { Report, afterLineLabel, heatColor, heatLevel, hotLinesFor, hotLinesFromPayload, verdictText } from "../../src/pure/hotLines";

const report: Report = {
  step_time_ms: 48.2,
  steps_profiled: 5,
  bottleneck: { kind: "data_loading", share: 0.61 },
  hotspots: [
    { path: "/w/train.py", line: 56, self_ms_per_step: 4.0, share: 0.083, category: "data_loading", static_codes: [] },
    { path: "/w/train.py", line: 54, self_ms_per_step: 12.1, share: 0.38, category: "data_loading", static_codes: ["TT302"], function: "main", top_names: ["DataLoader.__next__"] },
    { path: "/other.py", line: 3, self_ms_per_step: 20, share: 0.5, category: "compute" },
    { path: "/w/train.py", line: 54, self_ms_per_step: 1, share: 0.01, category: "compute" },
  ],
  static_findings: [{ code: "TT302", name: "loader-num-workers", path: "/w/train.py", line: 51, end_line: 54, message: "set num_workers" }],
};

test("after-line label", () => {
  assert.equal(afterLineLabel(0.38, 12.1, "data_loading"), "38% · 12.1 ms/step · data wait");
  assert.equal(afterLineLabel(0.051, 0.04, "host_sync"), "5% · 0.0 ms/step · host sync");
  assert.equal(afterLineLabel(0.2, 1, "new_thing"), "20% · 1.0 ms/step · new thing");
});

test("hot lines of one file, hottest first, 0-based, one per line", () => {
  const lines = hotLinesFor(report, "/w/train.py");
  assert.deepEqual(lines.map((l) => [l.line, l.label]), [
    [53, "38% · 12.1 ms/step · data wait"],
    [55, "8% · 4.0 ms/step · data wait"],
  ]);
  assert.equal(hotLinesFor(report, "/nowhere.py").length, 0);
});

test("hover has the breakdown and the static finding it confirms", () => {
  const [top] = hotLinesFor(report, "/w/train.py");
  assert.match(top.hover, /38% of the step, 12.1 ms\/step, mostly data wait/);
  assert.match(top.hover, /`DataLoader.__next__`/);
  assert.match(top.hover, /Confirms \*\*TT302\*\* \(loader-num-workers\): set num_workers/);
  assert.match(top.hover, /Mean step 48.2 ms over 5 steps/);
});

test("heat scales with share, and colours get hotter", () => {
  assert.deepEqual([0.01, 0.05, 0.1, 0.2, 0.4, 0.9].map(heatLevel), [0, 1, 2, 3, 4, 4]);
  const [top, second] = hotLinesFor(report, "/w/train.py");
  assert.equal(top.heat, 3);
  assert.equal(second.heat, 1);
  assert.equal(heatColor(4), "hsla(0, 90%, 50%, 0.95)");
  assert.equal(heatColor(0), "hsla(55, 90%, 50%, 0.35)");
  assert.equal(heatColor(99), heatColor(4));
});

test("Windows-style paths match", () => {
  const win: Report = { hotspots: [{ path: "C:\\w\\t.py", line: 2, share: 0.5, self_ms_per_step: 1, category: "compute" }] };
  assert.equal(hotLinesFor(win, "c:/w/t.py").length, 1);
});

test("status-bar verdict", () => {
  assert.equal(verdictText({ bottleneck: "data_loading", share: 0.61, stepTimeMs: 48.24 }), "torchtriage: data wait bound 61% · 48.2 ms/step");
  assert.equal(verdictText({ bottleneck: "none", share: 0, stepTimeMs: 3 }), "torchtriage: no clear bottleneck · 3.0 ms/step");
});

test("a report without hotspots draws nothing", () => {
  assert.deepEqual(hotLinesFor({}, "/w/train.py"), []);
});

test("notebook cells take their hot lines from the payload, per cell, hottest first, 0-based", () => {
  const cellA = "vscode-notebook-cell:/w/nb.ipynb#W0sZmlsZQ%3D%3D";
  const cellB = "vscode-notebook-cell:/w/nb.ipynb#W1sZmlsZQ%3D%3D";
  const byCell = hotLinesFromPayload([
    { uri: cellB, line: 2, share: 0.05, msPerStep: 1, category: "compute" },
    { uri: cellB, line: 4, share: 0.6, msPerStep: 12.1, category: "data_loading", codes: ["TT306"] },
    { uri: cellA, line: 1, share: 0.1, msPerStep: 2, category: "host_sync" },
    { uri: cellB, line: 4, share: 0.01, msPerStep: 0, category: "idle" }, // same line again: the hotter one stays
    { uri: cellA, line: 0, share: 0.9, msPerStep: 9, category: "compute" }, // not a line
  ]);
  assert.deepEqual([...byCell.keys()].sort(), [cellA, cellB].sort());
  const b = byCell.get(cellB)!;
  assert.deepEqual(b.map((l) => l.line), [3, 1]);
  assert.equal(b[0].label, "60% · 12.1 ms/step · data wait");
  assert.equal(b[0].heat, heatLevel(0.6));
  assert.match(b[0].hover, /Confirms TT306/);
  assert.equal(byCell.get(cellA)!.length, 1);
  assert.equal(hotLinesFromPayload(undefined).size, 0);
});
