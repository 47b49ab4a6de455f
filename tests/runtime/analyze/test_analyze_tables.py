"""issue 23's tables on an analysed H100 trace (``tests/data/runtime/cuda``), each against the JSON read by hand:
the kernel table (top kernel's time and calls per step, the Tensor-Core share), the GPU idle gaps with the
stepping thread's innermost event, and the memory curve against the device's memory.  No GPU needed."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from torchtriage.runtime.diagnosis.device.kernels import is_tensor_core_kernel
from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.report.html import render_html
from trace_recording import CUDA, check_schema, load_events

ROOT = CUDA.parents[3]
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _steps(events: list[dict]) -> list[tuple[float, float]]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))


def _step_of(t: float, steps: list[tuple[float, float]]) -> int:
    return next((i for i, (lo, hi) in enumerate(steps) if lo <= t < hi), -1)


def kernels_by_hand(path: Path) -> tuple[dict[str, list[float]], int]:
    """name -> [calls, us] of the GPU activities of the recorded steps (a kernel in its launch's step), and the step count."""
    events = [e for e in load_events(path) if e.get("ph") == "X"]
    steps = _steps(events)
    launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("cat") in GPU_CATS:
            at = launches.get(e.get("args", {}).get("correlation"), e["ts"])
            if _step_of(at, steps) >= 0:
                out[e["name"]][0] += 1
                out[e["name"]][1] += e["dur"]
    return out, len(steps)


@pytest.mark.parametrize("case", ["big_matmul", "tiny_ops"])
def test_the_kernel_table_against_the_json(case: str, tmp_path: Path) -> None:
    trace = CUDA / case / "trace.json.gz"
    trace = trace if trace.exists() else CUDA / case / "trace_trimmed.json.gz"
    report = analyze_trace(trace, out_dir=tmp_path / "run", roots=(ROOT,)).report
    assert report is not None
    check_schema(report)
    by_hand, n = kernels_by_hand(trace)
    table = report["kernels"]
    top_name, (calls, us) = max(by_hand.items(), key=lambda kv: kv[1][1])
    row = table["rows"][0]
    assert row["name"] == top_name
    assert row["calls_per_step"] == pytest.approx(calls / n, abs=1e-3)
    assert row["ms_per_step"] == pytest.approx(us / n / 1000, rel=1e-3)
    kernel_us = sum(v[1] for k, v in by_hand.items() if not k.lower().startswith(("memcpy", "memset")))
    tc_us = sum(v[1] for k, v in by_hand.items() if not k.lower().startswith(("memcpy", "memset")) and is_tensor_core_kernel(k))
    assert table["tensor_core_share"] == pytest.approx(tc_us / kernel_us, abs=1e-3)
    assert table["names"] == len(by_hand)
    if case == "big_matmul":  # fp32 with TF32 off: the GEMMs run on the CUDA cores, launched by the forward line
        assert table["tensor_core_share"] == 0.0 and not row["tensor_cores"]
        assert row["source"] == "out = model(data)"
    html = render_html(report, tmp_path / "run")
    assert "id='kernels'" in html and row["short_name"].split("<")[0] in html
    memory = report["memory"]
    assert memory["device_total_bytes"] == 85017493504  # the H100's totalGlobalMem in deviceProperties
    assert memory["peak_share_of_device"] == pytest.approx(memory["peak_bytes"] / memory["device_total_bytes"], abs=1e-4)


def test_the_longest_gpu_idle_gap_and_the_cpu_op_in_it(tmp_path: Path) -> None:
    trace = CUDA / "sync_every_step_v1" / "trace.json.gz"
    report = analyze_trace(trace, out_dir=tmp_path / "run", roots=(ROOT,)).report
    assert report is not None
    check_schema(report)
    events = [e for e in load_events(trace) if e.get("ph") == "X"]
    steps = _steps(events)
    busy = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in GPU_CATS)
    gaps, end = [], None
    for start, stop in busy:
        if end is not None and start > end:
            for lo, hi in steps:
                a, b = max(end, lo), min(start, hi)
                if b > a:
                    gaps.append((b - a, a, b))
        end = stop if end is None else max(end, stop)
    length, low, high = max(gaps)
    first = report["gpu_idle_gaps"][0]
    assert first["duration_ms"] == pytest.approx(length / 1000, abs=2e-3)
    main = {(e["pid"], e["tid"]) for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")}
    inner = set()
    for k in range(5):
        t = low + (high - low) * (2 * k + 1) / 10
        covering = [e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("cat") in ("cpu_op", "python_function")
                    and e["ts"] <= t < e["ts"] + e["dur"]]
        if covering:
            e = max(covering, key=lambda e: (e["ts"], -e["dur"]))
            inner.add(e["name"].split(": ", 1)[-1] if e["cat"] == "python_function" else e["name"])
    assert first["cpu"] in inner
    assert first["path"] and first["path"].endswith("sync_every_step.py") and first["source"]
