"""``torchtriage analyze`` on the traces recorded on an H100 (``tests/data/runtime/cuda``): the verdicts of
``torchtriage profile`` on the same runs, and the GPU's busy share per step against the same share
computed from the JSON by hand.  No GPU needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtriage.runtime.offline.analyze import analyze_trace
from trace_recording import CUDA, check_schema, gpu_busy_by_hand

ROOT = CUDA.parents[3]  # the checkout: the traces name /work/main/examples/*.py, found here by their tail


def cases() -> dict[str, dict[str, str]]:
    return json.loads((CUDA / "cases.json").read_text(encoding="utf-8"))


def trace_of(case: str) -> Path:
    folder = CUDA / case
    full = folder / "trace.json.gz"
    return full if full.exists() else folder / "trace_trimmed.json.gz"


@pytest.mark.parametrize(("case", "verdict"), [("big_matmul", "compute"), ("tiny_ops", "launch_overhead")])
def test_the_verdict_and_the_gpu_busy_share(case: str, verdict: str, tmp_path: Path) -> None:
    trace = trace_of(case)
    run = analyze_trace(trace, out_dir=tmp_path / "run")
    report = run.report
    assert report is not None, run.profile.warnings
    check_schema(report)
    assert report["bottleneck"]["kind"] == verdict == cases()[case]["verdict"]
    assert report["device"] == "cuda" and report["device_name"] == cases()[case]["device_name"]
    by_hand = gpu_busy_by_hand(trace)
    assert len(by_hand) == report["steps_profiled"] == len(report["gpu_busy"]["per_step"]) > 0
    assert report["gpu_busy"]["per_step"] == pytest.approx(by_hand, abs=1e-4)
    assert report["kernels_per_step"] > 0 and report["source"]["gpu_activities"] > 0


def test_a_gpu_bound_run_keeps_the_gpu_busy_and_its_kernels_on_the_forward_line(tmp_path: Path) -> None:
    """big_matmul: two large fp32 matmuls a step; the CPU runs ahead, so after the first step the GPU is
    busy through each ProfilerStep range, and the GEMM kernels belong to the line that called the model
    (the trace names /work/main/examples/big_matmul.py; the copy kept beside it is the script as it ran)."""
    run = analyze_trace(trace_of("big_matmul"), out_dir=tmp_path / "run", roots=(ROOT,))
    report = run.report
    assert report is not None
    assert min(report["gpu_busy"]["per_step"][1:]) > 0.9
    gemm = [c for c in run.profile.lines if c.device == "cuda" and any("gemm" in n for n in c.top_names)]
    # The recorded path exists as it is where the GPU run's checkout sits (/work/main); elsewhere its tail is found under ROOT.
    assert gemm and {Path(c.path).as_posix().rsplit("/", 2)[-2:] == ["examples", "big_matmul.py"] for c in gemm} == {True}
    assert all(Path(c.path).is_file() for c in gemm)
    script = (CUDA / "big_matmul" / "script.py").read_text(encoding="utf-8").splitlines()
    forward = [c for c in gemm if c.category == "compute" and "model(data)" in script[c.line - 1]]
    assert forward and forward[0] == max(gemm, key=lambda c: c.self_us), [(c.line, c.self_us) for c in gemm]
    # the GPU sets the pace: faster kernels come first; two plain matmuls, no attention: no attention advice
    actions = [r["action"] for r in report["bottleneck"]["recommendations"]]
    assert report["bottleneck"]["kind"] == "compute" and actions[0] == "Train in bf16 autocast", actions
    assert not any("idles" in a for a in actions) and "Use scaled_dot_product_attention for attention" not in actions
