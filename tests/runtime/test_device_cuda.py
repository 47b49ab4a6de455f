"""CUDA-only device findings on a CUDA profile built in the tests (cuda_trace.py): Tensor-Core shapes,
fp32 matmuls without TF32, GPU idle gaps with the CPU frame in each, allocator fragmentation."""

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
from torchtriage.runtime.results.profile_data import ProfileData
from torchtriage.runtime.report.writer import build_report, load_schema
from torchtriage.runtime.report.summary import render_summary

import cuda_trace
from cuda_trace import LOG_BODY

GIB = 2**30


@pytest.fixture
def raw(tmp_path: Path) -> dict[str, Any]:
    cuda_trace.write_script(tmp_path)
    return cuda_trace.agent_json(tmp_path)


def findings(profile: ProfileData) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in diagnose(profile).runtime_findings:
        out.setdefault(f.code, []).append(f)
    return out


def facts(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``raw`` with fields of its DeviceFacts record changed."""
    fields = ["float32_matmul_precision", "allow_tf32", "cudnn_allow_tf32", "capability_major", "capability_minor",
              "reserved_peak_bytes", "allocated_peak_bytes", "inactive_split_peak_bytes", "total_bytes", "alloc_conf"]
    row = list(raw["device_facts"][0])
    for name, value in changes.items():
        row[fields.index(name)] = value
    return {**raw, "device_facts": [row]}


def test_the_agent_records_shapes_with_their_kernel_time(raw: dict[str, Any]) -> None:
    profile = build_profile(raw)
    by_op = {s.op: s for s in profile.shapes}
    addmm, mm = by_op["aten::addmm"], by_op["aten::mm"]
    assert (addmm.dtype, addmm.dims, addmm.line, addmm.calls) == ("bfloat16", [[64, 1000], [1000, 30522]], 10, 3)
    assert addmm.gpu_us == pytest.approx(3 * 2000) and mm.gpu_us == pytest.approx(3 * 1000)
    assert (mm.dtype, mm.dims, mm.line) == ("float32", [[64, 512], [512, 512]], 11)
    assert profile.device_facts is not None and profile.device_facts.capability == (8, 0)


def test_misaligned_bf16_matmul_is_named_with_its_shape_cost_and_padding(raw: dict[str, Any]) -> None:
    [f] = findings(build_profile(raw))["TTR601"]
    assert f.span.line == 10 and f.name == "runtime-tensor-core-shape"
    assert "64x1000 @ 1000x30522 (bfloat16)" in f.message and "N=30522 is not a multiple of 8" in f.message
    assert "M=" not in f.message and "K=" not in f.message  # 64 and 1000 are multiples of 8
    assert f.extra["self_ms_per_step"] == pytest.approx(2.0)
    assert f.extra["share"] == pytest.approx(2.0 / 8.5, rel=1e-3)
    assert "N 30522 -> 30528" in f.extra["recommendations"][0]["action"]


def test_fp32_matmuls_with_tf32_off_on_ampere(raw: dict[str, Any]) -> None:
    [f] = findings(build_profile(raw))["TTR602"]
    assert f.span.line == 11 and "1.00 ms of GPU time per step" in f.message and "compute capability 8.0" in f.message
    assert "set_float32_matmul_precision('high')" in f.extra["recommendations"][0]["action"]
    # TF32 allowed: no TTR602, and 64x512 @ 512x512 is aligned for TF32 (multiples of 4)
    tf32 = findings(build_profile(facts(raw, float32_matmul_precision="high", allow_tf32=True)))
    assert "TTR602" not in tf32 and [f.span.line for f in tf32["TTR601"]] == [10]
    # a pre-Ampere GPU (7.0) has no TF32: nothing to switch on
    assert "TTR602" not in findings(build_profile(facts(raw, capability_major=7)))


def test_gaps_name_the_cpu_line_and_event_in_each(raw: dict[str, Any]) -> None:
    profile = build_profile(raw)
    big = [g for g in profile.gpu_gaps if g.duration_us >= 5000]
    assert [g.step for g in big] == [0, 1, 2] and all(g.duration_us == pytest.approx(5100) for g in big)
    step1 = big[1]
    assert (step1.line, step1.cpu, step1.exact, step1.probes) == (13, "sleep", True, 4)  # the long sleep of step 1
    for gap in (big[0], big[2]):  # log_metrics' own Python: the probes know the function, the samples the line
        assert (gap.function, gap.line, gap.exact, gap.probes) == ("log_metrics", LOG_BODY, True, 4)
    assert {g.next_kernel for g in big} == {"vectorized_elementwise_kernel"}


def test_gaps_are_evidence_on_the_verdict_of_their_line_and_a_finding_where_unexplained(raw: dict[str, Any]) -> None:
    diagnosis = diagnose(build_profile(raw))
    assert diagnosis.bottleneck.kind == "host_sync"
    assert any("The GPU is idle" in e.text for e in diagnosis.bottleneck.evidence)
    [python] = [v for v in diagnosis.secondary if v.kind == "python_overhead"]
    gap_lines = [e.line for e in python.evidence if e.text.startswith("GPU idle")]
    assert sorted(gap_lines) == [13, LOG_BODY, LOG_BODY]
    ttr604 = {f.span.line: f for f in diagnosis.runtime_findings if f.code == "TTR604"}
    assert set(ttr604) == {13, LOG_BODY}  # line 12's sync is TTR101's business
    assert "3.40 ms per step (40%)" in ttr604[LOG_BODY].message and "(log_metrics)" in ttr604[LOG_BODY].message


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
    assert report["schema_version"] == "1.2"
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
