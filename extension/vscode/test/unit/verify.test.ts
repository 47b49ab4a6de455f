import assert from "node:assert/strict";
import { test } from "node:test";
import { VerifyFix, VerifyReportPayload, chosenFix, fixLine, signedMs, verifyLogLines, verifyMessage } from "../../src/pure/verify";

const fix = (over: Partial<VerifyFix>): VerifyFix => ({
  code: "TT302", line: 28, title: "Set num_workers=4", source: "static", status: "measured", message: "",
  before_ms: 41.1175, after_ms: 9.0186, delta_ms: -32.0989, speedup: 4.559, change: "faster",
  interval: { method: "block bootstrap", confidence: 0.95, low_ms: -43.0206, high_ms: -20.4699 },
  helps: true, verdict: "4.6× faster; the TT302 fix paid off",
  losses: { compared: 15, max_relative_diff: 0, tolerance: 0.001, changed: false, first_changed: null },
  diff: "--- a/loader_bound.py\n+++ b/loader_bound.py\n@@ -28 +28 @@\n-loader = DataLoader(ds)\n+loader = DataLoader(ds, num_workers=4)\n",
  ...over,
});

// tests/data/runtime/verify/loader_bound.py verified with --repeat 2, as the torchtriage/verifyReport payload carries it.
const payload: VerifyReportPayload = {
  uri: "file:///w/loader_bound.py",
  verifyJson: "/tmp/v/verify.json",
  script: "/w/loader_bound.py",
  repeat: 2,
  baseline: { status: "completed", message: "", step_time_ms: 41.1175, bottleneck: "data_loading" },
  candidates: 2,
  fixes: [
    fix({}),
    fix({
      code: "TTR302", source: "runtime", title: "Set num_workers=1, persistent_workers=True", after_ms: 36.8628, delta_ms: -4.2547,
      speedup: 1.115, change: "none", helps: false, interval: { method: "block bootstrap", confidence: 0.95, low_ms: -14.5821, high_ms: 1.6349 },
    }),
  ],
  combined: null,
  kept: [{ code: "TT302", line: 28 }],
  warnings: [],
};

test("each fix as a line: before → after, the change and its interval", () => {
  assert.equal(fixLine(payload.fixes[0]), "TT302 line 28: 41.1 → 9.0 ms, faster ×4.6 (95% interval −43 to −20 ms)");
  assert.equal(fixLine(payload.fixes[1]), "TTR302 line 28: 41.1 → 36.9 ms, no measurable change (95% interval −15 to +1.6 ms)");
  assert.equal(fixLine(fix({ change: "slower", after_ms: 50, speedup: 0.8, interval: null })), "TT302 line 28: 41.1 → 50.0 ms, slower ×1.3");
  assert.equal(fixLine(fix({ status: "failed", change: "failed", after_ms: null, message: "the fixed script raised" })), "TT302 line 28: not measured (the fixed script raised)");
  assert.equal(fixLine(fix({ code: "TT302+TT101", source: "combined", line: 0 })).startsWith("TT302+TT101 together: 41.1 → 9.0 ms"), true);
  const lossy = fix({ losses: { compared: 15, max_relative_diff: 0.2, tolerance: 0.001, changed: true, first_changed: 3 } });
  assert.equal(fixLine(lossy).endsWith(", changes the loss"), true);
  assert.deepEqual([signedMs(-0.04), signedMs(1.63), signedMs(-43.02), signedMs(0)], ["0", "+1.6", "−43", "0"]);
});

test("the message names what helps and what Apply writes", () => {
  assert.equal(
    verifyMessage(payload, "loader_bound.py"),
    "torchtriage fix --verify (loader_bound.py, 41.1 ms/step): TT302 line 28 makes the step faster (×4.6); Apply writes it. " +
      "TT302 line 28: 41.1 → 9.0 ms, faster ×4.6 (95% interval −43 to −20 ms); " +
      "TTR302 line 28: 41.1 → 36.9 ms, no measurable change (95% interval −15 to +1.6 ms).",
  );
  assert.equal(chosenFix(payload)?.code, "TT302");
});

test("the combination when it helps, else the fastest fix that helps; nothing when none does", () => {
  const both: VerifyReportPayload = {
    ...payload,
    fixes: [fix({ code: "TT101", speedup: 1.3 }), fix({ speedup: 4.6 })],
    combined: fix({ code: "TT302+TT101", source: "combined", line: 0, speedup: 5.1 }),
  };
  assert.equal(chosenFix(both)?.code, "TT302+TT101");
  assert.equal(chosenFix({ ...both, combined: { ...both.combined!, helps: false } })?.code, "TT302");
  const none: VerifyReportPayload = { ...payload, fixes: [payload.fixes[1]], kept: [], warnings: ["one run per version: the intervals do not see run-to-run noise"] };
  assert.equal(chosenFix(none), undefined);
  assert.equal(
    verifyMessage(none, "t.py"),
    "torchtriage fix --verify (t.py, 41.1 ms/step): no fix makes the step measurably faster; nothing to apply. " +
      "TTR302 line 28: 41.1 → 36.9 ms, no measurable change (95% interval −15 to +1.6 ms). " +
      "Warnings: one run per version: the intervals do not see run-to-run noise",
  );
});

test("a script that did not record its steps, and one with nothing to verify", () => {
  const failed: VerifyReportPayload = { ...payload, baseline: { status: "no_steps", message: "no optimizer step", step_time_ms: null, bottleneck: null }, fixes: [], kept: [] };
  assert.equal(verifyMessage(failed, "t.py"), "torchtriage fix --verify (t.py): the script as it is did not record its steps (no_steps: no optimizer step), so no fix was measured.");
  assert.equal(verifyMessage({ ...payload, fixes: [], kept: [] }, "t.py"), "torchtriage fix --verify (t.py, 41.1 ms/step): no fix to verify (no quick fix or mechanical advice for this script).");
});

test("the log: each fix with its verdict, the warnings, the diff Apply writes", () => {
  const lines = verifyLogLines({ ...payload, warnings: ["TT302 changes the loss"] });
  assert.equal(lines[0], "TT302 line 28: 41.1 → 9.0 ms, faster ×4.6 (95% interval −43 to −20 ms) — 4.6× faster; the TT302 fix paid off");
  assert.equal(lines[2], "warning: TT302 changes the loss");
  assert.deepEqual(lines.slice(-2), ["-loader = DataLoader(ds)", "+loader = DataLoader(ds, num_workers=4)"]);
});
