"""Advice consistent with the machine: worker and thread counts from the cores; CUDA-only findings on CPU runs."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import jsonschema
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from torchtriage.findings import Finding, Severity, Span
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.diagnosis.machine import WorkerPlan, host_physical_cores
from torchtriage.runtime.results.profile_data import LineCost, ProfileData, StepTiming
from torchtriage.runtime.report.writer import build_report, load_schema
from torchtriage.runtime.report.summary import render_summary

STEP_US = 10_000.0


def make_profile(shares: dict[str, float], device: str = "cpu", steps: int = 4, **kw) -> ProfileData:
    return ProfileData(
        "/w/train.py", [], "/w", device, device, "2.13", "3.11", "optimizer",
        steps=[StepTiming(i, i * STEP_US, (i + 1) * STEP_US) for i in range(steps)],
        category_us={c: s * STEP_US * steps for c, s in shares.items()},
        **kw,
    )


def _loader_advice(cores: int, workers: int | None) -> str:
    d = diagnose(make_profile({"data_loading": 0.7, "compute": 0.3}, loader_workers=workers, extra={"physical_cores": cores}))
    assert d.bottleneck.kind == "data_loading"
    return "\n".join(f"{r.action} | {r.why} | {r.example}" for r in d.bottleneck.recommendations)


def test_two_workers_on_two_cores_asks_for_cheaper_samples_not_more_workers() -> None:
    text = _loader_advice(cores=2, workers=2)
    assert "Raise num_workers" not in text and "num_workers=4" not in text
    first = text.splitlines()[0]
    assert "cheaper" in first and "vectorise" in first
    assert "torch.set_num_threads(1)" in text
    assert "set_num_threads(0)" not in text and "cores - num_workers" not in text


def test_no_workers_on_two_cores_starts_at_one_and_keeps_a_thread() -> None:
    text = _loader_advice(cores=2, workers=0)
    assert "num_workers=1" in text and "num_workers=2" not in text
    assert "torch.set_num_threads(1)" in text


def test_workers_below_the_cap_are_raised_within_it() -> None:
    text = _loader_advice(cores=16, workers=4)
    assert "Raise num_workers from 4 to 8" in text and "torch.set_num_threads(8)" in text
    assert "Raise num_workers from 12 to 15" in _loader_advice(cores=16, workers=12)


@given(st.integers(1, 256), st.one_of(st.none(), st.integers(0, 300)))
def test_worker_and_thread_counts_always_fit_the_cores(cores: int, workers: int | None) -> None:
    plan = WorkerPlan(cores, workers)
    assert 1 <= plan.start <= plan.cap <= max(1, cores - 1)
    assert plan.threads >= 1
    if workers and workers >= plan.cap:
        assert plan.at_cap and plan.target == workers
    else:
        assert plan.target <= plan.cap
    text = _loader_advice(cores, workers)
    for n in map(int, re.findall(r"num_workers=(\d+)", text.split(" | ")[0] + " ".join(line.split(" | ")[-1] for line in text.splitlines()))):
        assert n <= max(plan.cap, workers or 0)
    assert all(int(n) >= 1 for n in re.findall(r"set_num_threads\((\d+)\)", text))


def test_host_cores_are_at_least_one() -> None:
    assert host_physical_cores() >= 1


def _cuda_findings() -> list[Finding]:
    def f(code: str, line: int) -> Finding:
        return Finding("/w/train.py", Span(line, 1, line, 10), code, code.lower(), Severity.WARNING, f"{code} here")

    return [f("TT301", 12), f("TT303", 8), f("TT302", 8)]


def _loading_profile(device: str) -> ProfileData:
    lines = [LineCost("/w/train.py", 12, "data_loading", 0.2 * STEP_US * 4)]
    return make_profile({"data_loading": 0.6, "compute": 0.4}, device=device, lines=lines, loader_workers=0)


def test_cuda_only_findings_cost_nothing_on_a_cpu_run() -> None:
    d = diagnose(_loading_profile("cpu"), _cuda_findings())
    links = {k.code: k for k in d.static_links}
    for code in ("TT301", "TT303"):
        assert not links[code].applies_on_this_device
        assert links[code].self_us_per_step == 0 and links[code].line_share == 0 and links[code].category_share == 0
    assert links["TT302"].applies_on_this_device and links["TT302"].category_share > 0
    assert [k.code for k in d.static_links][-2:] in (["TT301", "TT303"], ["TT303", "TT301"])  # listed last
    assert not any("TT301" in e.text or "TT303" in e.text for e in d.bottleneck.evidence)


def test_cuda_only_findings_keep_their_cost_on_a_cuda_run() -> None:
    d = diagnose(_loading_profile("cuda"), _cuda_findings())
    tt301 = next(k for k in d.static_links if k.code == "TT301")
    assert tt301.applies_on_this_device and tt301.line_share > 0


def test_report_and_summary_put_cuda_only_findings_in_a_separate_note(tmp_path: Path) -> None:
    p = _loading_profile("cpu")
    report = build_report(p, diagnose(p, _cuda_findings()))
    jsonschema.Draft202012Validator(load_schema()).validate(report)
    flags = {k["code"]: k["applies_on_this_device"] for k in report["static_findings"]}
    assert flags == {"TT301": False, "TT303": False, "TT302": True}
    buffer = StringIO()
    Console(width=200, file=buffer, color_system=None).print(render_summary(report))
    out = buffer.getvalue()
    note = next(line for line in out.splitlines() if "On a GPU these would also matter" in line)
    assert "TT301 at train.py:12" in note and "TT303 at train.py:8" in note and "TT302" not in note
