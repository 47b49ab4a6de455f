"""``torchtriage analyze`` on traces with no Python frames and no "Call stack" (HolisticTraceAnalysis' NCCL traces):
the stepping thread's ``record_function`` / module ranges (``ranges``) name the time, in report.json, report.html
and the verdict's evidence.  Each range's time per step, share and innermost time are computed again from the
JSON with the standard library."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
import pytest

from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.offline.ranges import RangeTable
from torchtriage.runtime.offline.steps import StepClock
from torchtriage.runtime.agent.wire import Step
from torchtriage.runtime.report.html.device import ranges_html
from trace_recording import DATA, check_schema

HTA = DATA / "traces" / "public" / "HolisticTraceAnalysis"
NCCL = HTA / "nccl_parser_config" / "nccl_data.json.gz"
RANK0 = HTA / "trace_filter" / "sampled_rank-0.json.gz"


def overlap(start: float, end: float, steps: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(end, hi) - max(start, lo)) for lo, hi in steps)


def by_hand(path: Path) -> tuple[int, float, dict[str, float], dict[str, float]]:
    """(steps, step us, {name: us inside per name}, {name: us innermost}) for the stepping thread's ranges."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    marks = [e for e in events if e["name"].startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    thread = (marks[0]["pid"], marks[0]["tid"])
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in marks)
    ranges = sorted(((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                     if e.get("cat") == "user_annotation" and (e["pid"], e["tid"]) == thread
                     and not e["name"].startswith("ProfilerStep#")), key=lambda r: (r[0], -r[1]))
    inside: dict[str, float] = defaultdict(float)
    innermost: dict[str, float] = defaultdict(float)
    for start, end, name in ranges:
        inside[name] += overlap(start, end, steps)
        children = [(s, e) for s, e, _ in ranges if start <= s and e <= end and (s, e) != (start, end)]
        direct = [c for c in children if not any(o != c and o[0] <= c[0] and c[1] <= o[1] for o in children)]
        innermost[name] += overlap(start, end, steps) - sum(overlap(s, e, steps) for s, e in direct)
    return len(steps), sum(hi - lo for lo, hi in steps), inside, innermost


@pytest.mark.parametrize("path", [NCCL, RANK0], ids=["nccl-2-ranks", "sampled-128-ranks"])
def test_forward_and_backward_shares_from_the_ranges(path: Path, tmp_path: Path) -> None:
    report = analyze_trace(path, out_dir=tmp_path / "run").report
    assert report is not None
    check_schema(report)
    assert not any(h["path"] for h in report["hotspots"])  # no stacks: no line
    steps, step_us, inside, innermost = by_hand(path)
    assert report["steps_profiled"] == steps
    rows = {r["name"]: r for r in report["ranges"]["rows"]}
    assert {"## forward ##", "## backward ##", "DistributedDataParallel.forward"} <= set(rows)
    for name, row in rows.items():
        assert row["ms_per_step"] == pytest.approx(inside[name] / steps / 1000, rel=1e-3, abs=1e-3), name
        assert row["share"] == pytest.approx(inside[name] / step_us, abs=1e-3), name
        assert row["self_ms_per_step"] == pytest.approx(innermost[name] / steps / 1000, rel=1e-3, abs=1e-3), name
    assert rows["DistributedDataParallel.forward"]["parent"] == "## forward ##" and rows["## forward ##"]["parent"] is None
    assert rows["## backward ##"]["share"] > 0.2 and rows["## forward ##"]["share"] > 0.2
    top = max(innermost, key=lambda k: innermost[k])
    texts = [e["text"] for e in report["bottleneck"]["evidence"]]
    ranged = [t for t in texts if "innermost record_function / module range" in t]
    assert len(ranged) == 1 and top in ranged[0] and texts.index(ranged[0]) == 1
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert ranges_html(report) in html and "id='ranges'" in html


def forward_work_by_hand(path: Path, range_name: str) -> dict[str, float]:
    """{op: own us per step} of the stepping thread's operators and runtime calls whose innermost range at their
    start is ``range_name`` (own: the duration less that of the events directly nested in it on the thread)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    marks = [e for e in events if e["name"].startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    thread = (marks[0]["pid"], marks[0]["tid"])
    mine = [e for e in events if (e["pid"], e["tid"]) == thread and not e["name"].startswith("ProfilerStep#")]
    ranges = [e for e in mine if e.get("cat") == "user_annotation"]
    work = sorted((e for e in mine if e.get("cat") in ("cpu_op", "cuda_runtime")), key=lambda e: (e["ts"], -e["dur"]))
    own: dict[str, float] = defaultdict(float)
    for k, op in enumerate(work):
        inner = [r for r in ranges if r["ts"] <= op["ts"] < r["ts"] + r["dur"]]
        if not inner or min(inner, key=lambda r: r["dur"])["name"] != range_name:
            continue
        end = op["ts"] + op["dur"]
        children = [c for c in work[k + 1:] if c["ts"] < end and c["ts"] + c["dur"] <= end]
        direct = [c for c in children if not any(o is not c and o["ts"] <= c["ts"] and c["ts"] + c["dur"] <= o["ts"] + o["dur"]
                                                 for o in children)]
        own[op["name"]] += (op["dur"] - sum(c["dur"] for c in direct)) / len(marks)
    return own


@pytest.mark.parametrize("path", [NCCL, RANK0], ids=["nccl-2-ranks", "sampled-128-ranks"])
def test_the_operators_inside_a_range_without_stacks(path: Path, tmp_path: Path) -> None:
    """What runs inside DistributedDataParallel.forward (the stepping thread's own ops): its largest ops with their own
    time, as a sweep of the raw events by hand gives them; the verdict names the largest range's largest op."""
    report = analyze_trace(path, out_dir=tmp_path / "run").report
    assert report is not None
    rows = {r["name"]: r for r in report["ranges"]["rows"]}
    row = rows["DistributedDataParallel.forward"]
    hand = forward_work_by_hand(path, "DistributedDataParallel.forward")
    expected = sorted(hand.items(), key=lambda kv: -kv[1])[:5]
    assert [o["name"] for o in row["top_ops"]] == [name for name, _ in expected]
    for o, (_, us) in zip(row["top_ops"], expected):
        assert o["self_ms_per_step"] == pytest.approx(us / 1000, rel=2e-2)
    assert sum(o["self_ms_per_step"] for o in row["top_ops"]) <= row["self_ms_per_step"] + 1e-3
    backward = rows["## backward ##"]["top_ops"]
    assert backward and all(o["self_ms_per_step"] > 0 for o in backward)
    ranged = next(e["text"] for e in report["bottleneck"]["evidence"] if "innermost record_function" in e["text"])
    top = max(rows.values(), key=lambda r: r["self_ms_per_step"])
    assert f"largest op {top['top_ops'][0]['name']}" in ranged
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "operators directly inside" in html and f"<code>{row['top_ops'][0]['name']}</code>" in html


def test_a_trace_with_stacks_has_no_range_table(tmp_path: Path) -> None:
    kineto = DATA / "traces" / "public" / "kineto" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
    report = analyze_trace(kineto, out_dir=tmp_path / "run").report
    assert report is not None and "ranges" not in report


def test_nested_ranges_of_one_name_count_once_and_the_innermost_takes_the_time() -> None:
    table = RangeTable(StepClock([Step(0, 0, 1000)]))
    table.add("outer", 0, 800)
    table.add("layer", 100, 500)
    table.add("layer", 200, 300)  # a module range inside one of the same name
    table.add("beyond", 900, 1500)  # past the step: clipped
    table.finish()
    block = {r[0]: r for r in table.block()["ranges"]}
    assert block["outer"][1:3] == [800, 400] and block["layer"][1:3] == [400, 400] and block["beyond"][1:3] == [100, 100]
    assert block["layer"][4] == "outer" and block["outer"][4] == ""
