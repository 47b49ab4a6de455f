import assert from "node:assert/strict";
import { test } from "node:test";
import { Report } from "../../src/pure/hotLines";
import { TRACE_FILTERS, analyzeArgument, traceHotLines, traceMessage, traceName, urisToClear } from "../../src/pure/trace";

const report: Report = {
  step_time_ms: 25.1,
  steps_profiled: 3,
  bottleneck: { kind: "compute", share: 0.94 },
  hotspots: [
    { path: "/w/ops.py", line: 5, self_ms_per_step: 23.3, share: 0.93, category: "compute", top_names: ["aten::mm"] },
    { path: "/w/loop.py", line: 20, self_ms_per_step: 0.3, share: 0.012, category: "compute" },
    { path: "ops.py", line: 9, self_ms_per_step: 1, share: 0.04, category: "compute" }, // not found on this machine
  ],
};

test("trace files and names", () => {
  assert.equal(traceName("/logs/host_1.1700000000123.pt.trace.json.gz"), "host_1.1700000000123");
  assert.equal(traceName("C:\\runs\\job.json"), "job");
  assert.equal(traceName("/logs/tb_logdir/"), "tb_logdir");
  assert.deepEqual(analyzeArgument("/logs/x.json"), { path: "/logs/x.json" });
  assert.deepEqual(Object.values(TRACE_FILTERS)[0], ["json", "gz"]); // .pt.trace.json and .json.gz end in these
});

test("a trace's hot lines per local file, from the report where its path matches", () => {
  const drawn = traceHotLines(report, [{ uri: "file:///w/ops.py", fsPath: "/w/ops.py" }, { uri: "file:///w/loop.py", fsPath: "/w/loop.py" }], undefined);
  assert.deepEqual([...drawn.keys()], ["file:///w/ops.py", "file:///w/loop.py"]);
  const [top] = drawn.get("file:///w/ops.py")!;
  assert.equal(top.line, 4);
  assert.equal(top.label, "93% · 23.3 ms/step · compute");
  assert.match(top.hover, /^\*\*torchtriage trace\*\* — 93% of the step/);
  assert.match(top.hover, /`aten::mm`/);
  assert.deepEqual(drawn.get("file:///w/loop.py")!.map((l) => l.line), [19]);
});

test("a file the report spells otherwise takes the server's lines; a file without lines is left out", () => {
  const drawn = traceHotLines(
    report,
    [{ uri: "file:///link/ops.py", fsPath: "/link/ops.py" }, { uri: "file:///w/empty.py", fsPath: "/w/empty.py" }],
    [{ uri: "file:///link/ops.py", line: 7, share: 0.93, msPerStep: 23.3, category: "compute" }],
  );
  assert.deepEqual([...drawn.keys()], ["file:///link/ops.py"]);
  assert.deepEqual(drawn.get("file:///link/ops.py")!.map((l) => [l.line, l.label]), [[6, "93% · 23.3 ms/step · compute"]]);
});

test("the message names the verdict and the files, or why nothing is drawn", () => {
  const summary = { bottleneck: "compute", share: 0.94, stepTimeMs: 25.1 };
  assert.equal(traceMessage("job", summary, ["ops.py", "loop.py"]), "torchtriage: trace job: compute bound 94% · 25.1 ms/step; hot lines drawn on ops.py, loop.py.");
  assert.equal(
    traceMessage("job", summary, ["a.py", "b.py", "c.py", "d.py", "e.py"]),
    "torchtriage: trace job: compute bound 94% · 25.1 ms/step; hot lines drawn on a.py, b.py, c.py and 2 more.",
  );
  const none = traceMessage("job", { bottleneck: "none", share: 0, stepTimeMs: 3 }, []);
  assert.match(none, /^torchtriage: trace job: no clear bottleneck · 3\.0 ms\/step\. No hot line is on a file of this workspace/);
  assert.match(none, /with_stack=True/);
});

test("clearing a trace clears each of its files on the server", () => {
  assert.deepEqual(urisToClear({ uri: "file:///w/ops.py", fromTrace: true, files: ["file:///w/ops.py", "file:///w/loop.py"] }), ["file:///w/ops.py", "file:///w/loop.py"]);
  assert.deepEqual(urisToClear({ uri: "file:///t.json", fromTrace: true, files: [] }), []);
  assert.deepEqual(urisToClear({ uri: "file:///w/train.py" }), ["file:///w/train.py"]);
});
