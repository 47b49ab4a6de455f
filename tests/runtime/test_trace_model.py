"""The chrome-trace model: tolerant parsing, steps, and GPU work counted by its launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtriage.runtime.trace import load_trace


def _event(name: str, cat: str, ts: float, dur: float, **args: object) -> dict[str, object]:
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


def test_kernels_count_in_the_step_that_launched_them(tmp_path: Path) -> None:
    events = [
        _event("ProfilerStep#2", "user_annotation", 100, 100),
        _event("ProfilerStep#1", "user_annotation", 0, 100),
        _event("cudaLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
        _event("cudaLaunchKernel", "cuda_runtime", 90, 5, correlation=2),
        _event("cudaLaunchKernel", "cuda_runtime", 150, 5, correlation=3),
        _event("gemm", "kernel", 20, 50, correlation=1),
        _event("gemm", "kernel", 120, 50, correlation=2),  # runs in step 2, launched in step 1
        _event("Memcpy HtoD", "gpu_memcpy", 160, 10, correlation=3),
        {"ph": "i", "name": "instant"},  # not a complete event: ignored
        "garbage",  # not an event at all: counted as skipped
        {"ph": "X", "name": "no timestamp"},  # unusable: skipped
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"name": "GPU"}]}))
    trace = load_trace(path)
    assert [s.name for s in trace.steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert trace.kernels_per_step() == [2, 1]
    assert trace.skipped == 2 and trace.metadata == {"deviceProperties": [{"name": "GPU"}]}


def test_not_a_trace_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"something": "else"}))
    with pytest.raises(ValueError, match="no traceEvents list"):
        load_trace(path)
