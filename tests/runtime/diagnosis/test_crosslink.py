"""Cross-links: static findings on hot lines, and runtime findings where the linter saw nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtriage.findings import Finding, Severity, Span
from torchtriage.runtime.diagnosis.crosslink import RUNTIME_CODES, covers, rule_category
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.results.profile_data import LineCost, MemoryLine, MemoryStep, ProfileData, StepTiming, SyncPoint

STEP_US = 1000.0
MIB = 2**20


def finding(code: str, path: str, line: int, end_line: int | None = None) -> Finding:
    return Finding(path, Span(line, 1, end_line or line, 10), code, code.lower(), Severity.WARNING, f"{code} here")


def make_profile(tmp: Path, shares: dict[str, float], **kw) -> ProfileData:
    n = 4
    return ProfileData(
        script=str(tmp / "train.py"),
        argv=[],
        cwd=str(tmp),
        device="cpu",
        device_name="cpu",
        torch_version="2.13.0",
        python="3.11",
        step_detection="optimizer",
        steps=[StepTiming(i, i * STEP_US, (i + 1) * STEP_US) for i in range(n)],
        category_us={c: s * STEP_US * n for c, s in shares.items()},
        **kw,
    )


def test_rule_categories_come_from_the_registry() -> None:
    assert rule_category("TT101") == "host_sync"
    assert rule_category("TT302") == "data_loading"
    assert rule_category("TT999x") == ""


def test_span_covering_a_line_and_relative_paths(tmp_path: Path) -> None:
    f = finding("TT101", "train.py", 10, 12)
    assert covers(f, str(tmp_path / "train.py"), 11, str(tmp_path))
    assert not covers(f, str(tmp_path / "train.py"), 13, str(tmp_path))
    assert not covers(f, str(tmp_path / "other.py"), 11, str(tmp_path))


def test_hot_line_gets_static_codes_and_the_finding_gets_its_cost(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    p = make_profile(tmp_path, {"host_sync": 0.4, "compute": 0.6}, lines=[LineCost(path, 45, "host_sync", 0.38 * STEP_US * 4)])
    d = diagnose(p, [finding("TT101", "train.py", 45), finding("TT301", "train.py", 80)])
    assert d.hotspots[0].static_codes == ["TT101"]
    link = {k.code: k for k in d.static_links}
    assert link["TT101"].line_share == pytest.approx(0.38)
    assert link["TT101"].category_share == pytest.approx(0.4)
    assert link["TT301"].line_share == 0.0 and not link["TT301"].hot
    assert [k.code for k in d.static_links][0] == "TT101"  # most expensive first


def test_sync_without_static_finding_is_a_runtime_finding(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    syncs = [SyncPoint(path, 50, "item", 4, 0.2 * STEP_US * 4, "aten::_local_scalar_dense"), SyncPoint(path, 60, "cpu", 4, 40.0)]
    p = make_profile(tmp_path, {"host_sync": 0.21, "compute": 0.79}, sync_points=syncs)
    d = diagnose(p, [finding("TT101", str(tmp_path / "train.py"), 60)])
    codes = [(f.code, f.span.line) for f in d.runtime_findings]
    assert codes == [("TTR101", 50)]  # line 60 already has TT101
    assert d.runtime_findings[0].severity is Severity.WARNING
    assert d.runtime_findings[0].name == RUNTIME_CODES["TTR101"]


def test_small_sync_is_only_info(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    p = make_profile(tmp_path, {"compute": 1.0}, sync_points=[SyncPoint(path, 50, "item", 4, 4.0)])
    (f,) = diagnose(p).runtime_findings
    assert f.severity is Severity.INFO


def test_loader_bound_without_tt302_is_reported_on_the_top_loading_line(tmp_path: Path) -> None:
    path = str(tmp_path / "data.py")
    lines = [LineCost(path, 12, "data_loading", 0.5 * STEP_US * 4)]
    p = make_profile(tmp_path, {"data_loading": 0.6, "compute": 0.4}, lines=lines, loader_workers=4)
    d = diagnose(p, [])
    (f,) = [f for f in d.runtime_findings if f.code == "TTR302"]
    assert (f.path, f.span.line) == (path, 12)
    assert "num_workers=4" in f.message
    with_rule = diagnose(p, [finding("TT302", "train.py", 5)])
    assert not [f for f in with_rule.runtime_findings if f.code == "TTR302"]
    explained = diagnose(p, [finding("TT306", "data.py", 12)])  # the per-element loop on that very line
    assert not [f for f in explained.runtime_findings if f.code == "TTR302"]
    elsewhere = diagnose(p, [finding("TT306", "data.py", 30)])
    assert [f for f in elsewhere.runtime_findings if f.code == "TTR302"]


def test_loader_below_bound_is_not_a_runtime_finding(tmp_path: Path) -> None:
    lines = [LineCost(str(tmp_path / "data.py"), 12, "data_loading", 0.1 * STEP_US * 4)]
    p = make_profile(tmp_path, {"data_loading": 0.1, "compute": 0.9}, lines=lines)
    assert not diagnose(p).runtime_findings


def test_memory_growth_line_without_tt201_is_reported(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    kw = dict(
        memory_steps=[MemoryStep(i, (i + 2) * MIB, (i + 1) * MIB) for i in range(6)],
        memory_lines=[MemoryLine(path, 33, 8 * MIB, 5 * MIB)],
    )
    p = make_profile(tmp_path, {"compute": 1.0}, **kw)
    (f,) = diagnose(p).runtime_findings
    assert (f.code, f.span.line, f.severity) == ("TTR201", 33, Severity.WARNING)
    assert not diagnose(p, [finding("TT201", path, 33)]).runtime_findings


def test_verdict_evidence_quotes_the_static_finding_and_its_cost(tmp_path: Path) -> None:
    path = str(tmp_path / "train.py")
    lines = [LineCost(path, 45, "host_sync", 0.38 * STEP_US * 4)]
    p = make_profile(tmp_path, {"host_sync": 0.4, "compute": 0.6}, lines=lines)
    d = diagnose(p, [finding("TT101", "train.py", 45), finding("TT302", "train.py", 9)])
    assert d.bottleneck.kind == "host_sync"
    texts = [e.text for e in d.bottleneck.evidence]
    assert "TT101 at train.py:45 costs 38% of step time" in texts[1]
    assert not any("TT302" in t for t in texts)  # another category


def test_cold_static_finding_of_the_verdict_category_is_quoted_as_the_cause(tmp_path: Path) -> None:
    lines = [LineCost(str(tmp_path / "train.py"), 20, "data_loading", 0.5 * STEP_US * 4)]
    p = make_profile(tmp_path, {"data_loading": 0.6, "compute": 0.4}, lines=lines)
    d = diagnose(p, [finding("TT302", "train.py", 9)])
    (quoted,) = [e for e in d.bottleneck.evidence if e.text.startswith("TT302")]
    assert quoted.line == 9 and "points at the cause: TT302 here" in quoted.text
