import assert from "node:assert/strict";
import { test } from "node:test";
import { LabReportPayload, LabRow, labLogLines, labMessage, rowText, verdictWords } from "../../src/pure/lab";

const row = (over: Partial<LabRow>): LabRow => ({
  name: "fp32", status: "measured", reason: null, message: "", medianMs: 211.83, iqrMs: 126.27, speedupVsFp32: 1, change: null,
  samplesPerS: 151, peakMemoryBytes: 31457, compileS: null, graphBreaks: null, recompiles: null, outputDtype: "float32",
  finalLoss: 2.248, lossCheck: "baseline", ...over,
});

// The README's examples/slow_loader.py lab, as the torchtriage/labReport payload carries it.
const payload: LabReportPayload = {
  uri: "file:///w/slow_loader.py",
  labPath: "/w/.torchtriage/runs/lab/lab.json",
  htmlPath: "/w/.torchtriage/runs/lab/lab.html",
  device: "cpu",
  verdict: "neither_helps",
  reading: [
    "fp32 → bf16: no measurable change (211.83 → 177.83 ms/step, within the spread): precision is not the bottleneck; look at the data loader and host-device syncs first (`torchtriage profile` shows which).",
    "bf16 → bf16+compile: no measurable change (177.83 → 153.46 ms/step): the kernels are already fused or the step is not launch/compute bound; run `torchtriage profile` to see where the step goes.",
    "No configuration is measurably faster than fp32 as written (211.83 ms/step).",
  ],
  rows: [
    row({}),
    row({ name: "bf16", medianMs: 177.83, iqrMs: 63.76, speedupVsFp32: 1.191, change: "no_measurable_change", outputDtype: "bfloat16", lossCheck: "ok" }),
    row({ name: "bf16+compile", medianMs: 153.46, iqrMs: 110.48, speedupVsFp32: 1.38, change: "no_measurable_change", compileS: 3.91, lossCheck: "ok" }),
  ],
};

test("the lab's verdict in words, and its last reading line, in one message", () => {
  assert.equal(
    labMessage(payload, "slow_loader.py"),
    "torchtriage lab (slow_loader.py on cpu): neither lower precision nor torch.compile helps measurably. " +
      "No configuration is measurably faster than fp32 as written (211.83 ms/step).",
  );
  assert.equal(verdictWords("take_both"), "take both lower precision and torch.compile");
  assert.equal(verdictWords("some_new_verdict"), "some new verdict");
  assert.equal(verdictWords(undefined), "no verdict");
});

test("failed rows are named in the message; no device and no reading still read well", () => {
  const failed: LabReportPayload = {
    ...payload, device: null, verdict: "incomplete", reading: [],
    rows: [row({}), row({ name: "bf16+compile", status: "failed", reason: "compile_failed", message: "no working C++ compiler", medianMs: null, iqrMs: null, speedupVsFp32: null })],
  };
  assert.equal(labMessage(failed, "t.py"), "torchtriage lab (t.py): incomplete (a configuration has no numbers). Failed: bf16+compile (see the lab report).");
});

test("each row as a line: time, spread, speed-up, compile time, loss problems, failures", () => {
  assert.deepEqual(labLogLines(payload).slice(0, 3), [
    "fp32: 211.83 ms/step (IQR 126.27)",
    "bf16: 177.83 ms/step (IQR 63.76), 1.19× vs fp32 (within the spread)",
    "bf16+compile: 153.46 ms/step (IQR 110.48), 1.38× vs fp32 (within the spread), compile 3.9 s",
  ]);
  assert.equal(labLogLines(payload)[3].startsWith("• fp32 → bf16: no measurable change"), true);
  assert.equal(rowText(row({ name: "fp16", status: "skipped", reason: "skipped_on_cpu", message: "fp16 is a GPU recipe", medianMs: null })), "fp16: skipped (skipped_on_cpu: fp16 is a GPU recipe)");
  assert.equal(rowText(row({ name: "bf16", status: "failed", reason: "loss_not_finite", message: "", medianMs: 12, speedupVsFp32: 0.5, change: "slower" })), "bf16: failed (loss_not_finite)");
  assert.equal(rowText(row({ name: "bf16", medianMs: 10, iqrMs: null, speedupVsFp32: 2, change: "faster", lossCheck: "outside_tolerance" })), "bf16: 10.00 ms/step, 2.00× vs fp32, loss outside tolerance");
});
