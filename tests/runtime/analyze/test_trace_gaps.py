"""What a trace recorded elsewhere cannot tell, said truly: the recording machine's cores, whether the script was
checked, line matching without the source; the loader's time on its ``for`` line; and the Overview rules on a trace
without Python frames or call stacks (no line: in the verdict instead)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchtriage.runtime.diagnosis.crosslink import loader_bound_message
from torchtriage.runtime.offline.analyze import AnalyzedRun, analyze_trace
from test_public_traces import NCCL, PAIR, SCRIPT, WORKERS_0, WORKERS_4, complete, load, over_steps


@pytest.fixture(scope="module")
def workers_0(tmp_path_factory: pytest.TempPathFactory) -> AnalyzedRun:
    return analyze_trace(WORKERS_0, out_dir=tmp_path_factory.mktemp("gaps_workers_0") / "run")


def _texts(report: dict[str, Any]) -> list[str]:
    verdict = report["bottleneck"]
    return [e["text"] for e in verdict["evidence"]] + [f"{r['action']} {r['why']} {r['example']}" for r in verdict["recommendations"]]


def test_worker_advice_on_a_trace_names_no_core_count(workers_0: AnalyzedRun) -> None:
    report = workers_0.report
    assert report is not None and report["bottleneck"]["kind"] == "data_loading"
    actions = [r["action"] for r in report["bottleneck"]["recommendations"]]
    machine = "the physical cores of the machine that ran it"
    assert f"Set num_workers to about half {machine}, leaving one core to the training process" in actions
    assert not [t for t in _texts(report) if "physical cores)" in t or "Set num_workers=" in t]


def test_worker_advice_uses_the_recorded_core_count(workers_0: AnalyzedRun) -> None:
    """A trace that says its machine's cores (``physical_cores`` in the profile's extra) gets the number back."""
    from torchtriage.runtime.diagnosis.bottleneck import diagnose

    profile = workers_0.profile
    profile.extra["physical_cores"] = 8
    try:
        actions = [r.action for r in diagnose(profile).bottleneck.recommendations]
    finally:
        profile.extra.pop("physical_cores", None)
    assert "Set num_workers=4 (about half of the 8 physical cores) and sweep up to 7" in actions


def test_ttr302_says_what_was_known(workers_0: AnalyzedRun, tmp_path: Path) -> None:
    report = workers_0.report
    assert report is not None
    found = {f["code"]: f for f in report["runtime_findings"]}
    message = found["TTR302"]["message"]
    assert "num_workers=0" in message and "no static check ran" in message and "give it worker processes" in message
    assert "the static check saw" not in message
    assert "TTR303" not in found  # TTR302 on the same line says the same (num_workers=0: give it workers)

    with_source = analyze_trace(WORKERS_0, out_dir=tmp_path / "run", roots=(SCRIPT.parent,))
    assert with_source.report is not None
    codes = {f["code"]: f for f in with_source.report["runtime_findings"]}
    static = {f["code"] for f in with_source.report["static_findings"]}
    # the script was checked (TT301, TT303... on it) and did not flag the DataLoader (num_workers from a variable)
    assert static and "TT302" not in static and "the static check did not flag the DataLoader" in codes["TTR302"]["message"]

    profile = workers_0.profile
    saved = profile.loader_workers
    try:
        profile.loader_workers = None
        assert "the static check saw no DataLoader without workers" in loader_bound_message(profile, 0.4, True)
        assert "no static check ran: check the DataLoader's num_workers" in loader_bound_message(profile, 0.4, False)
        profile.loader_workers = 2
        assert "with num_workers=2; the script's source was not found" in loader_bound_message(profile, 0.4, False)
    finally:
        profile.loader_workers = saved


def test_the_loaders_untraced_time_is_on_the_for_line(workers_0: AnalyzedRun) -> None:
    """The time inside ``enumerate(DataLoader)#...__next__`` that no operator covers (Python building the batch) goes
    to the range's own call-stack line, 42 (the ``for``): that line carries about the whole data-loading share."""
    report = workers_0.report
    assert report is not None
    events = complete(load(WORKERS_0))
    loading = over_steps(events, lambda e: e["name"].startswith("enumerate(DataLoader)#"))
    line = [h for h in report["hotspots"] if h["line"] == 42 and h["category"] == "data_loading"]
    assert len(line) == 1 and line[0]["share"] == pytest.approx(loading, abs=0.01)
    assert report["breakdown"]["data_loading"] == pytest.approx(loading, abs=1e-3)


def test_compare_without_the_source_matches_lines_by_number(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "compare", str(WORKERS_0), str(WORKERS_4.parent), "--out", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert any("matched by number" in w and SCRIPT.name in w for w in document["warnings"])
    assert not [r for r in document["lines"] if r["match"] == "unmatched"]
    loop = next(r for r in document["lines"] if r["before"] and r["before"]["line"] == 42)
    assert loop["match"] == "same" and loop["after"]["line"] == 42 and loop["delta_ms"] < 0
    forward = next(r for r in document["lines"] if r["before"] and r["before"]["line"] == 46)
    assert forward["match"] == "same" and forward["after"]["line"] == 46


def test_overview_rules_without_stacks_go_into_the_verdict(tmp_path: Path) -> None:
    """nccl_data (no with_stack): the GPU is busy 24% of the steps, TTR605 with no line; rank 1 of the sampled pair:
    communication 11.8%, TTR403 with no line.  Neither is a runtime finding (those need a line)."""
    run = analyze_trace(NCCL, out_dir=tmp_path / "nccl")
    report = run.report
    assert report is not None and report["hotspots"] == []
    assert report["gpu_busy"]["share"] < 0.5
    texts = _texts(report)
    assert any(t.startswith("TTR605 (runtime-gpu-underused): the GPU is busy only 24%") for t in texts)
    assert any("Raise the batch size" in t for t in texts)
    assert all(f["line"] >= 1 and f["path"] for f in report["runtime_findings"])

    pair = analyze_trace(PAIR, out_dir=tmp_path / "pair")
    assert pair.report is not None
    rank_1 = next(e for e in pair.report["ranks"]["per_rank"] if e["rank"] == 1)
    own = json.loads(Path(rank_1["report"]).read_text(encoding="utf-8"))
    assert own["breakdown"]["communication"] == pytest.approx(0.118, abs=0.002)
    texts = _texts(own)
    assert any(t.startswith("TTR403 (runtime-communication-share)") for t in texts)
    assert any("communication covers 11.8% of the step; no source line" in t for t in texts)
    assert "TTR403" not in {f["code"] for f in own["runtime_findings"]}
