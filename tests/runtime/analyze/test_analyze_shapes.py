"""``torchtriage analyze``'s op table grouped by op and input shape (``operators_by_shape``) on real traces recorded
with ``record_shapes=True``: kineto's torch 1.9 ResNet-50 sample and an H100 trace (torch 2.11).  Each group's calls
and self time per step are computed again from the JSON with the standard library: an operator counts in the
``ProfilerStep`` it starts in; its self time is its duration less the events nested directly in it on its thread."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.offline.tables import ShapeTable
from torchtriage.runtime.report.html.device import operator_shapes_html
from trace_recording import CUDA, DATA, check_schema

WORKERS_0 = DATA / "traces" / "public" / "kineto" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
OPS = {"cpu_op", "Operator"}
NESTED = OPS | {"python_function", "cuda_runtime", "cuda_driver", "Runtime"}  # what the sweep keeps on a thread's stack
LABELS = ("ProfilerStep#", "enumerate(DataLoader)")  # ranges older traces file among the operators


def h100_trace(case: str) -> Path:
    folder = CUDA / case
    full = folder / "trace.json.gz"
    return full if full.exists() else folder / "trace_trimmed.json.gz"


def by_hand(path: Path) -> tuple[int, dict[tuple[str, str], list[float]]]:
    """(steps, {(name, str(Input Dims)): [calls, self us]}) over the ProfilerStep ranges."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e["name"].startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation")  # the CPU's ranges
    threads: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        label = e["name"].startswith(LABELS) or (e["name"].startswith("Optimizer.") and "#" in e["name"])
        if e.get("cat") in NESTED and not label:
            threads[(e["pid"], e["tid"])].append(e)
    groups: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for thread in threads.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list[Any]] = []  # [event, children's time]
        for e in thread + [None]:  # type: ignore[list-item]
            while stack and (e is None or stack[-1][0]["ts"] + stack[-1][0]["dur"] <= e["ts"]):
                done, children = stack.pop()
                if stack:
                    stack[-1][1] += done["dur"]
                dims = done.get("args", {}).get("Input Dims")
                if done["cat"] in OPS and isinstance(dims, list) and any(lo <= done["ts"] < hi for lo, hi in steps):
                    group = groups[(done["name"], str(dims))]
                    group[0] += 1
                    group[1] += done["dur"] - children
            if e is not None:
                stack.append([e, 0.0])
    return len(steps), groups


def check(path: Path, tmp_path: Path, names: tuple[str, ...]) -> dict[str, Any]:
    report = analyze_trace(path, out_dir=tmp_path / "run").report
    assert report is not None
    check_schema(report)
    table = report["operators_by_shape"]
    steps, groups = by_hand(path)
    assert report["steps_profiled"] == steps
    rows = table["rows"]
    assert rows and [r["self_ms_per_step"] for r in rows] == sorted((r["self_ms_per_step"] for r in rows), reverse=True)
    for row in rows:
        calls, self_us = groups[(row["name"], row["input_shapes"])]
        assert row["calls_per_step"] == pytest.approx(calls / steps, abs=1e-3), row
        assert row["self_ms_per_step"] == pytest.approx(self_us / steps / 1000, rel=0.02, abs=2e-4), row
        assert row["total_ms_per_step"] >= row["self_ms_per_step"]
    for name in names:
        assert any(r["name"] == name for r in rows), name
    assert len(rows) + table["other_groups"] == len(groups)
    all_calls = sum(c for c, _ in groups.values()) / steps
    assert sum(r["calls_per_step"] for r in rows) + table["other_calls_per_step"] == pytest.approx(all_calls, abs=0.05)
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "id='operators-by-shape'" in html and operator_shapes_html(report) in html
    return report


def test_resnet50_on_torch_1_9_groups_convolutions_by_shape(tmp_path: Path) -> None:
    report = check(WORKERS_0, tmp_path, ("aten::cudnn_convolution", "aten::cudnn_batch_norm", "aten::copy_"))
    steps, groups = by_hand(WORKERS_0)
    convs = {k: v for k, v in groups.items() if k[0] == "aten::cudnn_convolution"}
    assert len(convs) > 10  # ResNet-50's convolutions, one group per distinct shape
    heaviest = max(convs, key=lambda k: convs[k][1])
    rows = {(r["name"], r["input_shapes"]): r for r in report["operators_by_shape"]["rows"]}
    assert heaviest in rows  # the heaviest convolution made the table (checked against the JSON in ``check``)
    assert heaviest[1].startswith("[[32, ")  # batch 32, as the tutorial's loader sets it
    assert sum(1 for name, _ in rows if name == "aten::cudnn_convolution") >= 2  # several shapes apart
    by_name = {r["name"]: r for r in report["operators"]}
    conv_rows = [r for (name, _), r in rows.items() if name == "aten::cudnn_convolution"]
    assert sum(r["calls_per_step"] for r in conv_rows) <= by_name["aten::cudnn_convolution"]["calls_per_step"] + 1e-3


def test_an_h100_trace_groups_its_matmuls_by_shape(tmp_path: Path) -> None:
    path = h100_trace("big_matmul")
    if not path.exists():
        pytest.skip("the H100 trace is not in this checkout")
    report = check(path, tmp_path, ("aten::addmm", "aten::mm"))
    addmm = [r for r in report["operators_by_shape"]["rows"] if r["name"] == "aten::addmm"]
    assert len({r["input_shapes"] for r in addmm}) == len(addmm) >= 2  # the two Linear layers' shapes apart


def test_a_trace_without_shapes_has_no_table(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 10, "dur": 50, "pid": 1, "tid": 1},
    ]}), encoding="utf-8")
    report = analyze_trace(trace, out_dir=tmp_path / "run").report
    assert report is not None and "operators_by_shape" not in report


def test_the_groups_stay_bounded_and_count_what_they_drop() -> None:
    table = ShapeTable(limit=8)
    for i in range(100):
        table.add("aten::add", f"[[{i}]]", 1000 + i, 1000 + i)
    table.add("aten::mm", "[[1, 2]]", 10**9, 10**9)
    assert len(table.stats) <= 8
    block = table.block(3)
    assert block["groups"][0][:2] == ["aten::mm", "[[1, 2]]"]
    assert len(block["groups"]) + block["other_groups"] == 101
    assert sum(g[2] for g in block["groups"]) + block["other_calls"] == 101
    assert sum(g[3] for g in block["groups"]) + block["other_self_ns"] == 10**9 + sum(1000 + i for i in range(100))
