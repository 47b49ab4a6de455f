"""report.json: every produced document satisfies report_schema.json; fields mean what the docs say."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchtriage.findings import Finding, Severity, Span
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.results.profile_data import (
    CATEGORIES,
    RUN_STATUSES,
    LineCost,
    MemoryLine,
    MemoryStep,
    ProfileData,
    RunStatus,
    StepTiming,
    SyncPoint,
)
from torchtriage.runtime.report.writer import SCHEMA_VERSION, build_report, load_report, load_schema, write_reports

VALIDATOR = jsonschema.Draft202012Validator(load_schema())
PATHS = ("/w/train.py", "/w/data.py", "rel/model.py")
SYNC_KINDS = ("item", "cpu", "tolist", "nonzero", "stream_sync", "device_sync", "event_sync")

lines_st = st.builds(
    LineCost,
    path=st.sampled_from(PATHS),
    line=st.integers(1, 200),
    category=st.sampled_from(CATEGORIES),
    self_us=st.floats(0, 1e6),
    top_names=st.lists(st.text(max_size=10), max_size=3),
)
syncs_st = st.builds(
    SyncPoint, path=st.sampled_from(PATHS), line=st.integers(1, 200), kind=st.sampled_from(SYNC_KINDS),
    count=st.integers(0, 100), stall_us=st.floats(0, 1e5),
)
mem_lines_st = st.builds(
    MemoryLine, path=st.sampled_from(PATHS), line=st.integers(1, 200),
    allocated_bytes=st.integers(0, 2**34), retained_bytes=st.integers(0, 2**34),
)


@st.composite
def profiles(draw: st.DrawFn) -> ProfileData:
    n = draw(st.integers(0, 12))
    durations = draw(st.lists(st.floats(1, 1e6), min_size=n, max_size=n))
    steps, t = [], 0.0
    for i, d in enumerate(durations):
        steps.append(StepTiming(i, t, t + d))
        t += d
    ends = draw(st.lists(st.integers(0, 2**34), min_size=0, max_size=n))
    return ProfileData(
        script="/w/train.py",
        argv=["--x"],
        cwd="/w",
        device=draw(st.sampled_from(["cpu", "cuda"])),
        device_name="dev",
        torch_version="2.13.0",
        python="3.11.7",
        step_detection="optimizer",
        steps=steps,
        category_us=draw(st.dictionaries(st.sampled_from(CATEGORIES), st.floats(0, 1e7))),
        lines=draw(st.lists(lines_st, max_size=8)),
        sync_points=draw(st.lists(syncs_st, max_size=4)),
        memory_steps=[MemoryStep(i, e + 10, e) for i, e in enumerate(ends)],
        memory_lines=draw(st.lists(mem_lines_st, max_size=4)),
        ops_per_step=draw(st.floats(0, 1e5)),
        kernels_per_step=draw(st.floats(0, 1e4)),
        loader_workers=draw(st.one_of(st.none(), st.integers(0, 32))),
        status=RunStatus(draw(st.sampled_from(RUN_STATUSES)), draw(st.text(max_size=20))),
        extra=draw(st.sampled_from([{}, {"memory_snapshot": "/w/snap.pickle"}, {"trace": "/w/t.json"}])),
        user_roots=draw(st.sampled_from([[], ["/w"], ["/", "/w", "/w/scripts"]])),
    )


findings_st = st.lists(
    st.builds(
        lambda code, path, line, span: Finding(path, Span(line, 1, line + span, 1), code, code.lower(), Severity.WARNING, "m"),
        st.sampled_from(["TT101", "TT102", "TT201", "TT301", "TT302"]),
        st.sampled_from(PATHS),
        st.integers(1, 200),
        st.integers(0, 3),
    ),
    max_size=5,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profiles(), findings_st)
def test_every_report_validates_against_the_schema(profile: ProfileData, findings: list[Finding]) -> None:
    report = build_report(profile, diagnose(profile, findings))
    errors = sorted(VALIDATOR.iter_errors(report), key=str)
    assert not errors, errors[0]
    json.dumps(report, allow_nan=False)  # strict JSON: no NaN / Infinity
    total = sum(report["breakdown"].values())
    recorded = profile.steps_profiled > 0  # a failed run still shows the steps it recorded
    assert total == (pytest.approx(1.0, abs=1e-3) if recorded else 0.0)
    if profile.status.status not in ("completed", "stopped_after_window"):
        assert report["bottleneck"]["kind"] == "none"  # but no verdict from a cut-short window
    assert [h["share"] for h in report["hotspots"]] == sorted((h["share"] for h in report["hotspots"]), reverse=True)


def test_schema_rejects_a_renamed_field() -> None:
    p = ProfileData("/w/t.py", [], "/w", "cpu", "cpu", "2.13", "3.11", "optimizer", steps=[StepTiming(0, 0, 10)])
    report = build_report(p, diagnose(p))
    assert VALIDATOR.is_valid(report)
    report["step_ms"] = report.pop("step_time_ms")
    assert not VALIDATOR.is_valid(report)


def test_write_reports_writes_both_files_and_sources(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nfor x in loader:\n    loss = model(x)\n", encoding="utf-8")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "trace.pt.trace.json").write_text("{}", encoding="utf-8")
    p = ProfileData(
        str(script), [], str(tmp_path), "cpu", "cpu", "2.13", "3.11", "optimizer",
        steps=[StepTiming(i, i * 100.0, (i + 1) * 100.0) for i in range(3)],
        category_us={"compute": 240.0, "data_loading": 60.0},
        lines=[LineCost(str(script), 3, "compute", 240.0)],
    )
    p.save(tmp_path / "run" / "profile.json")
    paths = write_reports(p, tmp_path / "run", [Finding(str(script), Span(3, 5, 3, 20), "TT101", "x", Severity.WARNING, "m")])
    report = load_report(tmp_path / "run")
    assert paths.json.name == "report.json" and paths.html.is_file()
    assert paths.report == report  # the payload handed back is exactly what was written, no read-back needed
    assert report["schema_version"] == SCHEMA_VERSION
    assert report["hotspots"][0]["source"] == "loss = model(x)"
    assert report["hotspots"][0]["static_codes"] == ["TT101"]
    assert report["step_time_ms"] == pytest.approx(0.1)
    assert report["trace"]["chrome_traces"] == [str(tmp_path / "run" / "trace.pt.trace.json")]
    assert report["trace"]["profile"] == str(tmp_path / "run" / "profile.json")
    assert VALIDATOR.is_valid(report)


def test_report_can_be_rebuilt_from_saved_profile(tmp_path: Path) -> None:
    p = ProfileData(
        "/w/t.py", [], "/w", "cpu", "cpu", "2.13", "3.11", "optimizer",
        steps=[StepTiming(i, i * 100.0, (i + 1) * 100.0) for i in range(3)], category_us={"compute": 300.0},
    )
    p.save(tmp_path / "profile.json")
    again = ProfileData.load(tmp_path / "profile.json")
    assert build_report(again, diagnose(again)) == build_report(p, diagnose(p))


def test_schema_doc_names_every_field_code_and_bar() -> None:
    from torchtriage.runtime.diagnosis.crosslink import RUNTIME_CODES
    from torchtriage.runtime.diagnosis.bottleneck import VERDICT_BARS

    doc = (Path(load_schema.__code__.co_filename).parent / "REPORT_SCHEMA.md").read_text(encoding="utf-8")
    for name in load_schema()["properties"]:
        assert f"`{name}`" in doc, name
    for code, name in RUNTIME_CODES.items():
        assert f"`{code}` | `{name}`" in doc
    for category, bar in VERDICT_BARS:
        assert f"`{category}` {bar:.2f}" in doc, category
