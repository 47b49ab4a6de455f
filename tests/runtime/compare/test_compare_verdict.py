"""compare.json from two run folders: step, shares, spread-aware verdict, fixed findings, schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from compare_support import line_of, loader_script, repeats_of, write_run

from torchtriage.runtime.compare import CompareError, compare_runs, load_run, load_schema, previous_run, write_comparison
from torchtriage.runtime.results.profile_data import RunStatus
from torchtriage.runtime.report.writer import load_schema as load_report_schema

COMPARE = jsonschema.Draft202012Validator(load_schema())
REPORT = jsonschema.Draft202012Validator(load_report_schema())
LOADER_BOUND = {"data_loading": 0.8, "compute": 0.2}
FIXED = {"data_loading": 0.15, "compute": 0.85}
LINES_BEFORE = {"time.sleep": ("data_loading", 40.0), "cross_entropy": ("compute", 8.0)}
LINES_AFTER = {"time.sleep": ("data_loading", 1.5), "cross_entropy": ("compute", 9.0)}


def _valid(document: dict) -> dict:
    errors = sorted(COMPARE.iter_errors(document), key=str)
    assert not errors, errors[0]
    return document


def test_the_loader_fix_is_faster_names_the_share_and_credits_tt302(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    write_run(tmp_path / "a", script, loader_script(0), [50.0, 51.0, 49.0], LOADER_BOUND, LINES_BEFORE)
    write_run(tmp_path / "b", script, loader_script(2, "print('training')\n"), [12.0, 11.0, 12.5], FIXED, LINES_AFTER)
    c = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b")))
    step = c["step_time"]
    assert step["change"] == "faster" and step["measurable"] and step["speedup"] == pytest.approx(50.0 / (35.5 / 3), rel=1e-3)
    loading = next(r for r in c["categories"] if r["category"] == "data_loading")
    assert (loading["before_share"], loading["after_share"], loading["change"]) == (pytest.approx(0.8), pytest.approx(0.15), "down")
    dataloader_line = line_of(loader_script(0), "DataLoader(")
    assert c["verdict"]["text"].startswith("data loading 80% \u2192 15%, step 50 \u2192 12 ms: 4.2\u00d7 faster")
    assert f"the TT302 fix (train.py:{dataloader_line}) paid off" in c["verdict"]["text"]
    assert c["verdict"]["credited"] == ["TT302"] and c["verdict"]["lead_category"] == "data_loading"
    [tt302] = [f for f in c["findings"] if f["code"] == "TT302"]
    assert tt302["status"] == "fixed" and tt302["line_status"] == "changed" and tt302["after"] is None
    assert c["same_script"] and c["warnings"] == []
    assert c["noise"]["note"]  # single runs: the verdict says what it cannot see


def test_a_difference_inside_the_per_step_spread_is_no_measurable_change(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    write_run(tmp_path / "a", script, loader_script(0), [20.0, 24.0, 21.0, 23.0], LOADER_BOUND, LINES_BEFORE)
    write_run(tmp_path / "b", script, loader_script(0), [22.5, 20.5, 23.5, 21.5], LOADER_BOUND, LINES_BEFORE)
    c = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b")))
    assert c["step_time"]["change"] == "none" and not c["step_time"]["measurable"]
    assert c["verdict"]["text"].startswith("no measurable change: step 22 \u2192 22 ms")
    assert not any(r["measurable"] for r in c["lines"])


def test_repeats_widen_the_spread_to_the_range_across_runs(tmp_path: Path) -> None:
    """The same 2 ms difference: measurable against steady steps, not against runs whose means vary by 3 ms."""
    script = tmp_path / "train.py"
    steady_a, steady_b = [20.0, 20.1, 19.9], [22.0, 22.1, 21.9]
    write_run(tmp_path / "a", script, loader_script(0), steady_a, LOADER_BOUND, LINES_BEFORE)
    write_run(tmp_path / "b", script, loader_script(0), steady_b, LOADER_BOUND, LINES_BEFORE)
    single = compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    assert single["step_time"]["change"] == "slower"
    write_run(tmp_path / "ra", script, loader_script(0), steady_a, LOADER_BOUND, LINES_BEFORE,
              repeats=repeats_of([18.5, 20.0, 21.5], LOADER_BOUND, kept=2))
    write_run(tmp_path / "rb", script, loader_script(0), steady_b, LOADER_BOUND, LINES_BEFORE,
              repeats=repeats_of([20.5, 22.0, 23.5], LOADER_BOUND, kept=2))
    for name in ("ra", "rb"):
        report = load_run(tmp_path / name).report
        assert REPORT.is_valid(report) and report["repeats"]["count"] == 3
    assert "median of 3 runs (18.50\u201321.50 ms)" in (tmp_path / "ra" / "report.html").read_text()
    repeated = _valid(compare_runs(load_run(tmp_path / "ra"), load_run(tmp_path / "rb")))
    assert repeated["step_time"]["change"] == "none"
    assert repeated["noise"]["before"] == {"source": "repeats", "runs": 3, "spread_ms": 3.0}
    # the interval draws whole runs: runs 1.5 ms apart on each side put a 2 ms difference within reach of zero
    interval = repeated["step_time"]["interval"]
    assert interval["runs"] == {"before": 3, "after": 3} and interval["low_ms"] <= 0 <= interval["high_ms"]
    assert "interval" in repeated["verdict"]["text"] and "over 9 and 9 steps of 3 and 3 runs includes no change" in repeated["verdict"]["text"]


def test_a_steady_difference_under_five_percent_is_no_measurable_change(tmp_path: Path) -> None:
    """Each run steady to 0.1 ms, 1.5% apart: as far apart as two runs of one script; 6% apart is slower."""
    script = tmp_path / "train.py"
    steady = [20.0, 20.1, 19.9]
    write_run(tmp_path / "a", script, loader_script(0), steady, LOADER_BOUND, LINES_BEFORE,
              repeats=repeats_of([19.95, 20.0, 20.05], LOADER_BOUND, kept=2))
    write_run(tmp_path / "b", script, loader_script(0), [t * 1.015 for t in steady], LOADER_BOUND, LINES_BEFORE,
              repeats=repeats_of([20.25, 20.3, 20.35], LOADER_BOUND, kept=2))
    close = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b")))
    step = close["step_time"]
    assert step["after_spread_ms"] == pytest.approx(0.1) and step["threshold_ms"] == pytest.approx(1.0)
    assert step["change"] == "none" and not step["measurable"]
    # the interval excludes zero: the floor is what keeps it from a call
    assert close["verdict"]["text"] == (
        "no measurable change: step 20 \u2192 20 ms (+1.5%), the 95% interval +0.23 to +0.37 ms over 9 and 9 steps of 3 and 3 runs "
        "reaches within 5% of the step (1.0 ms), the least a comparison of two runs calls measurable")
    write_run(tmp_path / "c", script, loader_script(0), [t * 1.06 for t in steady], LOADER_BOUND, LINES_BEFORE,
              repeats=repeats_of([21.15, 21.2, 21.25], LOADER_BOUND, kept=2))
    apart = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "c")))
    assert apart["step_time"]["change"] == "slower" and apart["step_time"]["threshold_ms"] == pytest.approx(1.0)


def test_slower_names_the_category_that_grew(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    text = loader_script(2)
    write_run(tmp_path / "a", script, text, [10.0, 10.2, 9.8], {"compute": 0.9, "data_loading": 0.1}, LINES_AFTER)
    write_run(tmp_path / "b", script, text, [15.0, 15.2, 14.8], {"compute": 0.6, "host_sync": 0.4}, LINES_AFTER)
    c = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b")))
    assert c["verdict"]["text"].startswith("host sync 0% \u2192 40%, step 10 \u2192 15 ms: 1.5\u00d7 slower")
    assert c["verdict"]["change"] == "slower" and c["verdict"]["credited"] == []


def test_compare_json_goes_to_the_newer_run_with_a_report_section(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    write_run(tmp_path / "a", script, loader_script(0), [50.0, 51.0, 49.0], LOADER_BOUND, LINES_BEFORE)
    write_run(tmp_path / "b", script, loader_script(2), [12.0, 11.0, 12.5], FIXED, LINES_AFTER)
    after = load_run(tmp_path / "b")
    c = compare_runs(load_run(tmp_path / "a"), after)
    path = write_comparison(c, after)
    assert path == tmp_path / "b" / "compare.json" and json.loads(path.read_text()) == c
    html = (tmp_path / "b" / "report.html").read_text()
    assert "Compared with <a href='../a/report.html'><code>a</code></a>" in html
    assert "paid off" in html and "Hot lines, matched across edits" in html
    assert not (tmp_path / "a" / "compare.json").exists()


def test_runs_that_cannot_be_compared_say_why(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    with pytest.raises(CompareError, match="no such run folder"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareError, match="has no report.json: it is not the folder of a `torchtriage profile` run"):
        load_run(tmp_path / "empty")
    (tmp_path / "died").mkdir()
    (tmp_path / "died" / "output.log").write_text("Killed\n")
    with pytest.raises(CompareError, match="the run ended before writing its report"):
        load_run(tmp_path / "died")
    write_run(tmp_path / "raised", script, loader_script(0), [], {}, {}, status=RunStatus("raised", "ValueError: bad batch"))
    with pytest.raises(CompareError, match=r"did not record its steps \(raised: ValueError: bad batch\)"):
        load_run(tmp_path / "raised")
    (tmp_path / "other.json").mkdir()
    (tmp_path / "other.json" / "report.json").write_text('{"hello": 1}')
    with pytest.raises(CompareError, match="is not a torchtriage report.json"):
        load_run(tmp_path / "other.json")


def test_different_scripts_are_compared_with_a_warning(tmp_path: Path) -> None:
    write_run(tmp_path / "a", tmp_path / "train_v1.py", loader_script(0), [50.0, 51.0, 49.0], LOADER_BOUND, LINES_BEFORE)
    write_run(tmp_path / "b", tmp_path / "train_v2.py", loader_script(2), [12.0, 11.0, 12.5], FIXED, LINES_AFTER)
    c = _valid(compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b")))
    assert not c["same_script"] and c["warnings"][0].startswith("different scripts:")
    sleep = next(r for r in c["lines"] if r["before"] and "time.sleep" in r["before"]["source"])
    assert sleep["after"]["path"].endswith("train_v2.py") and sleep["match"] == "same"
    assert c["step_time"]["change"] == "faster"


def test_baseline_last_is_the_latest_earlier_successful_run_of_the_same_script(tmp_path: Path) -> None:
    runs, script = tmp_path / "runs", tmp_path / "train.py"
    write_run(runs / "1-train", script, loader_script(0), [50.0, 51.0], LOADER_BOUND, LINES_BEFORE)
    first = load_run(runs / "1-train")
    with pytest.raises(CompareError, match="no earlier successful run of train.py"):
        previous_run(first)
    write_run(runs / "2-other", tmp_path / "other.py", loader_script(0), [5.0, 5.0], LOADER_BOUND, LINES_BEFORE)
    write_run(runs / "3-train", script, loader_script(1), [30.0, 31.0], LOADER_BOUND, LINES_BEFORE)
    write_run(runs / "4-train", script, loader_script(1), [], {}, {}, status=RunStatus("raised", "boom"))
    write_run(runs / "5-train", script, loader_script(2), [12.0, 12.5], FIXED, LINES_AFTER)
    _stamp(runs, ["1-train", "2-other", "3-train", "4-train", "5-train"])
    assert previous_run(load_run(runs / "5-train")).name == "3-train"
    assert previous_run(load_run(runs / "3-train")).name == "1-train"


def _stamp(runs: Path, order: list[str]) -> None:
    """Give the runs distinct creation times in this order (a test writes them within one second)."""
    for i, name in enumerate(order):
        path = runs / name / "report.json"
        report = json.loads(path.read_text())
        report["created"] = f"2026-01-01T00:00:{i:02d}+00:00"
        path.write_text(json.dumps(report))


def test_the_schema_doc_names_every_field_and_the_readme_includes_it() -> None:
    doc = (Path(load_schema.__code__.co_filename).parent / "COMPARE_SCHEMA.md").read_text(encoding="utf-8")
    schema = load_schema()
    for name in schema["properties"]:
        assert f"`{name}`" in doc, name
    for section in ("step_time", "categories", "lines", "findings", "verdict"):
        item = schema["properties"][section]
        for name in (item.get("items") or item)["properties"]:
            assert name in doc, (section, name)
