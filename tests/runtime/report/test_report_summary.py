"""The rich summary the CLI prints: verdict, step time, breakdown, top lines, run folder."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.results.profile_data import LineCost, ProfileData, RunStatus, StepTiming
from torchtriage.runtime.report.writer import build_report
from torchtriage.runtime.report.summary import TOP_LINES, render_summary


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


def _bracketed_report(module: str = "slow_loader") -> dict:
    lines = [
        LineCost(f"/w/{module}.py", 33, "data_loading", 61_000.0 * 5),
        LineCost(f"/w/{module}.py", 34, "data_loading", 12_345.0 * 5),
        LineCost("/w/train.py", 57, "compute", 2_500.0 * 5),
    ]
    p = ProfileData(
        "/w/train.py", [], "/w", "cpu", "cpu", "2.13", "3.11", "optimizer",
        steps=[StepTiming(i, i * 100_000.0, (i + 1) * 100_000.0) for i in range(5)],
        category_us={"data_loading": 0.8 * 500_000, "compute": 0.2 * 500_000},
        lines=lines,
    )
    report = build_report(p, diagnose(p))
    sources = {33: "row = self.data[index].tolist()  # Python-level per-sample work", 34: "x = batch[bold]", 57: "loss = criterion(model(x), y)"}
    for h in report["hotspots"]:
        h["source"] = sources[h["line"]]
    return report


def _render(report: dict, width: int) -> str:
    buffer = StringIO()  # not a terminal: what a pipe gets
    Console(width=width, file=buffer).print(render_summary(report))
    return buffer.getvalue()


def test_top_lines_at_80_columns_keep_every_number_and_escape_the_source() -> None:
    out = _render(_bracketed_report(), 80)
    table = out[out.index("Top 3 lines"):]
    assert "ms/step" in table and "share" in table
    for ms, share in (("61.00", "61%"), ("12.35", "12%"), ("2.50", "2%")):
        assert ms in table and share in table
    rows = table.splitlines()
    at = next(i for i, line in enumerate(rows) if "61.00" in line)
    assert "61%" in rows[at] and "slow_loader.py:33" in rows[at]
    assert rows[at + 1].strip() == "row = self.data[index].tolist()  # Python-level per-sample work"  # not markup
    assert "batch[bold]" in table
    assert all(len(line) <= 80 for line in rows)


def test_wide_consoles_keep_the_source_on_the_row_and_cut_it_with_an_ellipsis() -> None:
    out = _render(_bracketed_report(), 96)
    table = out[out.index("Top 3 lines"):]
    assert "source" in table.splitlines()[1]
    row = next(line for line in table.splitlines() if "61.00" in line)
    assert "61%" in row and "row = self.data[index].tolist()" in row and row.endswith("\u2026") and len(row) == 96


def test_narrow_consoles_put_the_source_under_its_numbers() -> None:
    out = _render(_bracketed_report("some_rather_long_module_name"), 64)
    table = out[out.index("Top 3 lines"):]
    rows = table.splitlines()
    at = next(i for i, line in enumerate(rows) if "61.00" in line)
    assert "61%" in rows[at] and rows[at + 1].lstrip().startswith("row = self.data[index].tolist()")
    assert all(len(line) <= 64 for line in rows)


def test_the_run_folder_lists_every_artefact_it_holds(tmp_path: Path) -> None:
    for name in ("report.html", "report.json", "trace.json.gz", "profile.json", "agent.json", "output.log"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "tb").mkdir()
    out = text_of(render_summary(make_report(), tmp_path))
    for name in ("report.html", "report.json", "trace.json.gz", "tb/", "profile.json", "agent.json", "output.log"):
        assert f"  {name}" in out, name
    assert f"tensorboard --logdir {tmp_path / 'tb'}" in out.replace("\n", "")


def test_withheld_verdicts_are_named_in_the_summary() -> None:
    report = make_report()
    report["withheld_verdicts"] = [{"kind": "launch_overhead", "share": 0.2, "steps_at_bar": 1, "steps": 5, "reason": "launch overhead averages 20% of the step but reaches its 10% bar in only 1 of 5 steps: too noisy to call"}]
    assert "Not called: launch overhead averages 20%" in text_of(render_summary(report))
