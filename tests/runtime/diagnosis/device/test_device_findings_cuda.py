"""CUDA-only device findings on a CUDA profile built in the tests (cuda_trace.py): allocator fragmentation,
none of them on a CPU run, and the report sections that show them (Tensor Cores and idle gaps: test_tensor_cores.py,
test_idle_gaps.py)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.report.html import render_html
from torchtriage.runtime.report.writer import build_report, load_schema
from torchtriage.runtime.report.summary import render_summary

from device_support import GIB, facts, findings


def test_fragmentation_asks_for_expandable_segments(raw: dict[str, Any]) -> None:
    [f] = findings(build_profile(raw))["TTR702"]
    assert "expandable_segments:True" in f.message and f.severity.value == "info"
    assert "8,192.0 MiB (40%)" in f.extra["evidence"][0]["text"]
    assert "TTR702" not in findings(build_profile(facts(raw, alloc_conf="expandable_segments:True")))
    assert "TTR702" not in findings(build_profile(facts(raw, reserved_peak_bytes=13 * GIB)))  # 1 GiB cached: normal
    [near] = findings(build_profile(facts(raw, total_bytes=22 * GIB)))["TTR702"]
    assert near.severity.value == "warning"


def test_a_cpu_run_gets_none_of_the_cuda_findings(raw: dict[str, Any]) -> None:
    cpu = {**raw, "meta": {**raw["meta"], "device": "cpu"}}
    codes = set(findings(build_profile(cpu)))
    assert not codes & {"TTR601", "TTR602", "TTR604", "TTR702"}


def test_the_report_carries_the_sections_and_renders_them(raw: dict[str, Any], tmp_path: Path) -> None:
    profile = build_profile(raw)
    report = build_report(profile, diagnose(profile), tmp_path)
    jsonschema.validate(report, load_schema())
    assert report["schema_version"] == "1.3"
    assert report["device_facts"] == {"float32_matmul_precision": "highest", "allow_tf32": False, "cudnn_allow_tf32": True,
                                      "compute_capability": "8.0"}
    top = report["matmul_shapes"][0]
    assert (top["op"], top["misaligned"], top["gpu_ms_per_step"], top["source"]) == ("aten::addmm", {"N": 30522}, 2.0, "y = model(x)")
    assert report["matmul_shapes"][1]["misaligned"] == {}  # fp32 with TF32 off never reaches the Tensor Cores
    assert report["gpu_idle_gaps"][0]["duration_ms"] == pytest.approx(5.1)
    ttr601 = next(f for f in report["runtime_findings"] if f["code"] == "TTR601")
    assert ttr601["evidence"][0]["line"] == 10 and ttr601["recommendations"]
    html = render_html(report, tmp_path)
    for anchor in ("id='gpu-gaps'", "id='matmul-shapes'", "N=30522", "fp32 with TF32 off: not on Tensor Cores", "evidence and fixes", "TTR604"):
        assert anchor in html
    console = Console(file=StringIO(), width=120)
    console.print(render_summary(report))
    text = console.file.getvalue()
    assert "Largest GPU idle gap: 5.10 ms" in text and "TTR702" in text
