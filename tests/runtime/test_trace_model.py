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


def test_each_steps_gpu_work_is_read_by_its_launch_runtime_or_driver(tmp_path: Path) -> None:
    events = [
        _event("ProfilerStep#7", "user_annotation", 0, 100),
        _event("ProfilerStep#8", "user_annotation", 100, 100),
        _event("ProfilerStep#7", "gpu_user_annotation", 20, 400),  # the step's mirror on the GPU: not a step
        _event("cudaLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
        _event("cuLaunchKernel", "cuda_driver", 60, 5, correlation=2),  # backward GEMMs are launched by the driver API
        _event("cudaLaunchKernel", "cuda_runtime", 150, 5, correlation=3),
        _event("gemm", "kernel", 20, 150, correlation=1),
        _event("gemm", "kernel", 170, 150, correlation=2),  # launched in step 7, ends at 320
        _event("ncclDevKernel_AllReduce", "kernel", 320, 80, correlation=3),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load_trace(path)
    assert [s.category for s in trace.steps] == ["user_annotation", "user_annotation"]
    work = trace.device_work()
    assert sorted(work) == [7, 8]
    assert (work[7].kernels, work[7].busy_us, work[7].end_us, work[7].communication_us) == (2, 300, 320, 0)
    assert (work[8].kernels, work[8].busy_us, work[8].end_us, work[8].communication_us) == (1, 80, 400, 80)


def test_a_cut_off_trace_is_a_clear_error(tmp_path: Path) -> None:
    import gzip

    whole = gzip.compress(json.dumps({"traceEvents": [_event("x", "kernel", 0, 1)] * 2000}).encode())
    path = tmp_path / "trace.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="not a readable gzip file"):
        load_trace(path)
