"""The terminal summary of an analysed trace: the top GPU kernels (with Tensor Cores and the launching line) on a
real H100 trace, and on a trace without stacks the top ranges with the largest operator inside each, in place of
the lines it cannot have; every figure read back from report.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.report.summary import render_summary
from trace_recording import CUDA, DATA

NCCL = DATA / "traces" / "public" / "HolisticTraceAnalysis" / "nccl_parser_config" / "nccl_data.json.gz"


def _printed(report: dict[str, Any]) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(render_summary(report))
    return console.export_text()


def test_the_top_kernels_of_a_gpu_trace(tmp_path: Path) -> None:
    report = analyze_trace(CUDA / "big_matmul" / "trace.json.gz", out_dir=tmp_path / "run").report
    assert report is not None
    text = _printed(report)
    kernels = report["kernels"]
    assert f"Top GPU kernels ({kernels['gpu_ms_per_step']:.2f} ms of GPU work a step" in text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Top GPU kernels"))
    rows = lines[start + 2:start + 2 + 5]
    for row, kernel in zip(rows, kernels["rows"]):
        assert row.split()[0] == f"{kernel['ms_per_step']:.2f}" and f"{Path(kernel['path']).name}:{kernel['line']}" in row
        assert ("\u2713" in row) == kernel["tensor_cores"] and kernel["short_name"][:20] in row
    assert "Top 5 lines" in text and "Top record_function ranges" not in text  # the trace has stacks


def test_a_trace_without_stacks_shows_its_ranges_not_empty_lines(tmp_path: Path) -> None:
    report = analyze_trace(NCCL, out_dir=tmp_path / "run").report
    assert report is not None and not any(h["path"] for h in report["hotspots"])
    text = _printed(report)
    assert "Top record_function ranges" in text and "Top 5 lines" not in text
    backward = next(r for r in report["ranges"]["rows"] if r["name"] == "## backward ##")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Top record_function ranges"))
    row = next(line for line in lines[start:] if "## backward ##" in line)
    top = backward["top_ops"][0]
    assert row.split()[0] == f"{backward['self_ms_per_step']:.2f}"
    assert top["name"] in row and row.rstrip().endswith(f"{top['self_ms_per_step']:.2f}")
    assert "Top GPU kernels" in text and "ncclKernel_AllReduce" in text
