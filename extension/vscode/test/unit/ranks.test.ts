import assert from "node:assert/strict";
import { test } from "node:test";
import { RanksSection, processCountError, profileArgument, rankChoices, rankSuffix } from "../../src/pure/ranks";

test("the profile argument: a bare URI unless a cell or processes are given; rank defaults to 0", () => {
  const uri = "file:///w/train.py";
  assert.equal(profileArgument(uri), uri);
  assert.deepEqual(profileArgument(uri, { cell: "vscode-notebook-cell:/w/nb.ipynb#W1" }), { uri, cell: "vscode-notebook-cell:/w/nb.ipynb#W1" });
  assert.deepEqual(profileArgument(uri, { nprocPerNode: 2 }), { uri, nprocPerNode: 2, rank: 0 });
  assert.deepEqual(profileArgument(uri, { nprocPerNode: 4, rank: 3 }), { uri, nprocPerNode: 4, rank: 3 });
  assert.equal(profileArgument(uri, { rank: 1 }), uri); // a rank means nothing without processes
});

test("processes per node are checked before anything runs", () => {
  assert.equal(processCountError("2"), undefined);
  assert.equal(processCountError(" 8 "), undefined);
  for (const bad of ["", "two", "1.5", "-1"]) assert.equal(processCountError(bad), "a whole number of processes, e.g. 2", bad);
  assert.equal(processCountError("0"), "from 1 to 64 processes");
  assert.equal(processCountError("65"), "from 1 to 64 processes");
});

test("the status bar names the rank shown among the ranks profiled", () => {
  assert.equal(rankSuffix(1, [1, 0]), " · rank 1 of 0\u20131");
  assert.equal(rankSuffix(0, [0]), " · rank 0 of 0");
  assert.equal(rankSuffix(null, []), "");
  assert.equal(rankSuffix(undefined, undefined), "");
});

// The combined report's ranks section of the README's straggler run (rank 1 sleeps 30 ms a batch).
const section: RanksSection = {
  shown_rank: 0,
  covered: [0, 1],
  per_rank: [
    { rank: 1, status: { status: "stopped_after_window" }, step_time_ms: 44.0, busy_ms: 35.2, bottleneck: "data_loading", report: "/r/run/rank1/report.json", html: "/r/run/rank1/report.html" },
    { rank: 0, status: { status: "completed" }, step_time_ms: 43.8, busy_ms: 4.3, bottleneck: "communication", report: "/r/run/rank0/report.json", html: "/r/run/rank0/report.html" },
    { rank: 2, status: { status: "raised", message: "rank 2: RuntimeError" }, busy_ms: null, bottleneck: "none", report: null, html: null },
  ],
  stragglers: [{ rank: 1, gap_ms: 30.8 }],
};

test("the ranks offered: in rank order, described by their numbers, stragglers and failures named", () => {
  const choices = rankChoices(section, 0);
  assert.deepEqual(choices.map((c) => [c.rank, c.label, c.description]), [
    [0, "rank 0 (shown)", "step 43.8 ms · busy 4.3 ms · communication"],
    [1, "rank 1", "step 44.0 ms · busy 35.2 ms · data wait · straggler (+30.8 ms)"],
    [2, "rank 2", "no clear bottleneck · raised · no report"],
  ]);
  assert.equal(choices[1].report, "/r/run/rank1/report.json");
  assert.equal(choices[2].report, null);
  assert.deepEqual(rankChoices(undefined, 0), []);
});
