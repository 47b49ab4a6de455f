"""The pattern findings of ``torchtriage analyze`` on CPU traces recorded here with plain torch.profiler.

``patterns_traced.py`` (record_shapes and with_stack on) has the hazards torch's profiler pattern matcher
looks for: each becomes its finding on its exact line, with a cost per step inside the step, and the costs
of the optimizer step, the loader wait, the convolution and the fills match the same figures summed from
the JSON by hand.  ``--clean`` runs the fixed loop (fused optimizer, ``set_to_none=True``, Conv2d without
bias, vectorised weights): none of those findings.  A real two-rank DDP trace over gloo gives TensorBoard's
communication rule (TTR403), and neither NCCL nor DataParallel advice (no GPU).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchtriage.runtime.offline.analyze import AnalyzedRun, analyze_trace
from trace_recording import DATA, check_schema, line_of

PATTERNS = DATA / "traces" / "patterns_traced.py"
DDP = DATA / "traces" / "ddp_traced.py"
HAZARDS = [
    ("TTR303", "for step, (x, y) in enumerate(loader):"),
    ("TTR306", "weights[i] = i * 0.1 + 1.0"),
    ("TTR504", "opt.step()"),
    ("TTR507", "opt.zero_grad(set_to_none=clean)"),
    ("TTR509", "out = model(x)"),
]


def _record(script: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _analyze(folder: Path, *flags: str) -> AnalyzedRun:
    trace = folder / "trace.json"
    _record(PATTERNS, "--trace", str(trace), *flags)
    run = analyze_trace(trace, out_dir=folder / "run", roots=(PATTERNS.parent,))
    assert run.report is not None, run.profile.warnings
    check_schema(run.report)
    return run


@pytest.fixture(scope="module")
def dirty(tmp_path_factory: pytest.TempPathFactory) -> AnalyzedRun:
    return _analyze(tmp_path_factory.mktemp("dirty"))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> AnalyzedRun:
    return _analyze(tmp_path_factory.mktemp("clean"), "--clean")


def found(run: AnalyzedRun, code: str) -> list[dict[str, Any]]:
    assert run.report is not None
    return [f for f in run.report["runtime_findings"] if f["code"] == code]


def by_hand(trace: Path) -> dict[str, float]:
    """Microseconds per recorded step, summed from the JSON alone: the optimizer's ``Optimizer.step#`` ranges,
    the loader's ``enumerate(DataLoader)#`` ranges, the Conv2d module's calls and the ``aten::zero_`` calls
    inside ``Optimizer.zero_grad#`` ranges, each counted when it starts inside a ``ProfilerStep#`` range."""
    events = [e for e in json.loads(trace.read_text(encoding="utf-8"))["traceEvents"] if e.get("ph") == "X"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")]
    inside = [e for e in events if any(lo <= e["ts"] < hi for lo, hi in steps)]
    zero_grad = [(e["ts"], e["ts"] + e["dur"]) for e in inside if e["name"].startswith("Optimizer.zero_grad#")]
    sums = {
        "optimizer": sum(e["dur"] for e in inside if e["name"].startswith("Optimizer.step#")),
        "loader": sum(e["dur"] for e in inside if e["name"].startswith("enumerate(DataLoader)#")),
        "conv": sum(e["dur"] for e in inside if e["name"].startswith("nn.Module: Conv2d")),
        "fills": sum(e["dur"] for e in inside if e["name"] == "aten::zero_" and any(lo <= e["ts"] < hi for lo, hi in zero_grad)),
    }
    return {key: value / len(steps) for key, value in sums.items()}


@pytest.mark.parametrize(("code", "text"), HAZARDS)
def test_each_hazard_is_a_finding_on_its_line_with_its_cost(dirty: AnalyzedRun, code: str, text: str) -> None:
    report = dirty.report
    assert report is not None
    [finding] = found(dirty, code)
    assert (finding["path"], finding["line"]) == (str(PATTERNS), line_of(text, PATTERNS))
    assert 0 < finding["self_ms_per_step"] <= report["step_time_ms"]
    assert 0 < finding["share"] <= 1
    assert finding["evidence"] and finding["recommendations"]


def test_the_costs_are_the_traces_own_figures(dirty: AnalyzedRun) -> None:
    hand = by_hand(dirty.trace)
    cost = {code: found(dirty, code)[0]["self_ms_per_step"] * 1000 for code, _ in HAZARDS}
    assert cost["TTR504"] == pytest.approx(hand["optimizer"], rel=0.01)
    assert cost["TTR303"] == pytest.approx(hand["loader"], rel=0.01)
    assert cost["TTR509"] == pytest.approx(hand["conv"], rel=0.01)
    assert cost["TTR507"] == pytest.approx(hand["fills"], rel=0.05, abs=0.01)


def test_the_details_name_what_was_measured(dirty: AnalyzedRun) -> None:
    loader = found(dirty, "TTR303")[0]
    assert loader["severity"] == "warning" and loader["details"]["in_process"]  # the Dataset sleeps 2 ms a sample
    assert found(dirty, "TTR504")[0]["details"]["optimizer"] == "Adam"
    assert found(dirty, "TTR504")[0]["details"]["implementation"] == "_single_tensor_adam"
    assert found(dirty, "TTR306")[0]["details"]["repeats_per_step"] == 32  # weights[i] for i in range(32)
    assert found(dirty, "TTR507")[0]["details"]["tensors_per_step"] == 6  # the conv's, the norm's and the linear's weight and bias
    assert found(dirty, "TTR509")[0]["details"]["calls_per_step"] == 1


def test_the_fixed_loop_has_none_of_them(clean: AnalyzedRun) -> None:
    for code in ("TTR306", "TTR504", "TTR507", "TTR509"):
        assert not found(clean, code), code
    kinds = {p["kind"] for p in clean.profile.extra["trace_patterns"]["patterns"]}
    assert kinds == {"loader"}  # still num_workers=0: the loader is the only pattern left
    assert not found(clean, "TTR303") or found(clean, "TTR303")[0]["line"] == line_of("for step, (x, y) in enumerate(loader):", PATTERNS)


def test_a_ddp_trace_over_gloo_gives_the_communication_rule(tmp_path: Path) -> None:
    _record(DDP, "--tb", str(tmp_path / "log"))
    trace = sorted((tmp_path / "log").glob("*.pt.trace.json"))[0]
    run = analyze_trace(trace, out_dir=tmp_path / "run", roots=(DDP.parent,))
    assert run.report is not None
    check_schema(run.report)
    [comm] = found(run, "TTR403")
    assert run.report["breakdown"]["communication"] > 0.10
    assert comm["share"] == pytest.approx(run.report["breakdown"]["communication"], abs=1e-3)
    assert comm["path"] == str(DDP) and 0 < comm["self_ms_per_step"] <= run.report["step_time_ms"]
    facts = run.profile.extra["trace_patterns"]
    assert facts["backend"] == "gloo" and "ddp" in {p["kind"] for p in facts["patterns"]}
    assert not found(run, "TTR402") and not found(run, "TTR401")  # a CPU run: no NCCL or DataParallel advice
