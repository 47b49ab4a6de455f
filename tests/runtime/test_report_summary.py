"""The rich summary the CLI prints: verdict, step time, breakdown, top lines, run folder."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from torchtriage.runtime.diagnosis import diagnose
from torchtriage.runtime.model import LineCost, ProfileData, RunStatus, StepTiming
from torchtriage.runtime.report import build_report
from torchtriage.runtime.summary import TOP_LINES, render_summary


def text_of(renderable) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def make_report(status: str = "completed", nlines: int = 8) -> dict:
    p = ProfileData(
        "/w/train.py", [], "/w", "cpu", "cpu", "2.13", "3.11", "optimizer",
        steps=[StepTiming(i, i * 4000.0, (i + 1) * 4000.0) for i in range(5)],
        category_us={"compute": 0.8 * 4000 * 5, "python_overhead": 0.2 * 4000 * 5},
        lines=[LineCost("/w/train.py", 10 + i, "compute", 1000.0 * (nlines - i)) for i in range(nlines)],
        status=RunStatus(status, "boom" if status != "completed" else ""),
    )
    return build_report(p, diagnose(p))


def test_summary_shows_verdict_step_time_breakdown_and_top_five(tmp_path: Path) -> None:
    out = text_of(render_summary(make_report(), tmp_path / "run"))
    assert "Bottleneck: compute" in out
    assert "4.00 ms" in out
    assert "python overhead" in out
    shown = [f"train.py:{10 + i}" for i in range(8) if f"train.py:{10 + i} " in out]
    assert shown == [f"train.py:{10 + i}" for i in range(TOP_LINES)]
    assert str(tmp_path / "run") in out


def test_summary_of_a_failed_run_says_so() -> None:
    out = text_of(render_summary(make_report(status="raised")))
    assert "Run raised: boom" in out
    assert "no clear bottleneck" in out
