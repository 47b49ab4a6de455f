"""The operator table (agent -> profile.json -> report.json -> report.html) and the run folder's file links."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest
import torch

from torchtriage.runtime.agent.collect import USER_SCOPE, Collector, EventType
from torchtriage.runtime.diagnosis.bottleneck import diagnose
from torchtriage.runtime.report.html import render_html
from torchtriage.runtime.results.profile_data import MemoryLine, MemoryStep, OpCost, ProfileData, StepTiming
from torchtriage.runtime.report.writer import build_report, load_schema, write_reports

from run_support import line_of, profile_cli

VALIDATOR = jsonschema.Draft202012Validator(load_schema())
FUNCTION_SCOPE = torch._C._profiler.RecordScope.FUNCTION
MIB = 2**20


def op(name: str, start: int, end: int, *children: Any, tid: int = 1, scope: Any = FUNCTION_SCOPE) -> SimpleNamespace:
    """A stand-in for one TorchOp node of the profiler's event tree."""
    return SimpleNamespace(tag=EventType.TorchOp, name=name, start_time_ns=start, end_time_ns=end, duration_time_ns=end - start,
                           start_tid=tid, extra_fields=SimpleNamespace(scope=scope, sequence_number=-1), children=list(children))


def test_collector_counts_calls_self_and_total_once_for_nested_same_name_ops() -> None:
    tree = [
        op("ProfilerStep#1", 0, 1000, scope=USER_SCOPE),
        op("ProfilerStep#2", 1000, 2000, scope=USER_SCOPE),
        op("aten::foo", 100, 500, op("aten::foo", 200, 300, op("aten::bar", 220, 260))),
        op("aten::bar", 1100, 1150, tid=2),  # another thread
        op("aten::early", -50, 50),  # began before the recorded steps
    ]
    collector = Collector(None, "/no/agent")  # type: ignore[arg-type]  # no Python events: user code is never asked
    collector.collect(tree)
    stats = {(r.name, r.main): (r.calls, r.self_ns, r.total_ns) for r in collector.result()["ops"]}
    assert stats == {
        ("aten::foo", True): (2, (400 - 100) + (100 - 40), 400),  # the inner foo is inside the outer's total
        ("aten::bar", True): (1, 40, 40),
        ("aten::bar", False): (1, 50, 50),
    }


def profile(tmp: Path, n_ops: int = 40) -> ProfileData:
    script = tmp / "train.py"
    script.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 61)), encoding="utf-8")
    n = 4
    ops = [OpCost(f"aten::op{i}", "cpu", 2 * n, 1000.0 * (n_ops - i), 1500.0 * (n_ops - i), i % 7 != 3, str(script), 10 + i % 5, "main")
           for i in range(n_ops)]
    ops.append(OpCost("ampere_sgemm_128x64_" + "x" * 200, "cuda", n, 500.0, 500.0))  # a long kernel name, no user line
    return ProfileData(
        str(script), [], str(tmp), "cpu", "cpu", "2.13.0", "3.11", "optimizer",
        steps=[StepTiming(i, i * 100_000.0, (i + 1) * 100_000.0) for i in range(n)],
        category_us={"compute": 0.9 * 100_000 * n},
        memory_steps=[MemoryStep(i, 3 * MIB, 2 * MIB) for i in range(n)],
        memory_lines=[MemoryLine(str(script), 12, 5 * MIB, 1024)],
        ops=ops,
    )


def test_report_json_has_the_operator_table_per_step(tmp_path: Path) -> None:
    p = profile(tmp_path)
    report = build_report(p, diagnose(p))
    assert VALIDATOR.is_valid(report)
    ops = report["operators"]
    assert len(ops) == 41 and [o["self_ms_per_step"] for o in ops] == sorted((o["self_ms_per_step"] for o in ops), reverse=True)
    first = ops[0]
    assert first == {
        "name": "aten::op0", "device": "cpu", "main_thread": True, "calls_per_step": 2.0, "self_ms_per_step": 10.0,
        "total_ms_per_step": 15.0, "self_share": 0.1, "total_share": 0.15, "path": p.script, "line": 10, "function": "main",
        "source": "line_10 = 10",
    }
    kernel = next(o for o in ops if o["device"] == "cuda")
    assert kernel["path"] is None and kernel["line"] is None and kernel["source"] == ""
    assert ProfileData.from_json(json.loads(json.dumps(p.to_json()))).ops == p.ops  # profile.json round trip


def test_an_older_report_without_the_new_keys_validates_and_renders(tmp_path: Path) -> None:
    p = profile(tmp_path)
    report = build_report(p, diagnose(p))
    del report["operators"]
    for key in ("tensorboard_logdir", "output_log", "agent_json"):
        del report["trace"][key]
    assert VALIDATOR.is_valid(report)
    assert "predates operator statistics" in render_html(report)
    assert ProfileData.from_json({k: v for k, v in p.to_json().items() if k != "ops"}).ops == []


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.table = ""
        self.rows: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.table = dict(attrs).get("class") or ""
        if tag == "tr" and self.table:
            self.rows[self.table] = self.rows.get(self.table, 0) + 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_page_shows_top_operators_and_explains_memory_columns(tmp_path: Path) -> None:
    page = Page()
    page.feed(write_reports(profile(tmp_path), tmp_path / "run").html.read_text(encoding="utf-8"))
    text = " ".join(page.text)
    assert page.rows["operators"] == 1 + 30  # header + top 30
    assert "(top 30 of 41)" in text and "aten::op0" in text and "aten::op29" in text and "aten::op30" not in text
    assert "CPU (other thread)" in text  # op3 runs off the main thread
    headers = {a.get("title") for t, a in page.tags if t == "th" and a.get("title")}
    assert any("without the operators it calls" in h for h in headers)  # self time explained
    assert any("not live memory" in h for h in headers)  # "allocated" explained where it is shown
    assert "allocated over the window (MiB)" in text and "still held at the end (MiB)" in text
    assert "live allocated memory (MiB)" in text  # the memory chart's y axis, with its unit
    assert "step time (ms)" in text and "step" in text


def test_run_files_are_relative_links_that_survive_moving_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "tb" / "train").mkdir(parents=True)
    for name in ("trace.json", "output.log", "agent.json", "tb/train/host.pt.trace.json"):
        (run / name).write_text("{}", encoding="utf-8")
    p = profile(tmp_path)
    p.extra.update(trace=str(run / "trace.json"), tensorboard_logdir=str(run / "tb"), output_log=str(run / "output.log"))
    p.save(run / "profile.json")
    write_reports(p, run)
    moved = tmp_path / "elsewhere" / "run with space"
    moved.parent.mkdir()
    shutil.move(str(run), str(moved))
    page = Page()
    page.feed((moved / "report.html").read_text(encoding="utf-8"))
    links = [a["href"] for t, a in page.tags if t == "a" and a.get("href")]
    hrefs = [h for h in links if not h.startswith("file:")]
    assert hrefs == ["trace.json", "tb/", "report.json", "profile.json", "output.log", "agent.json"]
    for href in hrefs:
        assert (moved / unquote(href)).exists(), href
    # report.json's row links the contract's one document, installed with the package
    (schema,) = [h for h in links if h.startswith("file:")]
    assert schema.endswith("/REPORT_SCHEMA.md") and Path(unquote(schema[len("file://"):])).is_file()
    text = " ".join(page.text)
    assert "Perfetto" in text and f"tensorboard --logdir {run / 'tb'}" in text


@pytest.mark.slow
def test_a_real_run_fills_the_operator_table(tmp_path: Path) -> None:
    proc, run_dir = profile_cli(tmp_path, "train_basic.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    ops = {o["name"]: o for o in report["operators"]}
    mm = ops["aten::mm"]  # c = a @ b forward, its backward, and the Linear's weight gradient
    # `a @ b` runs through an operator slot: its line comes from frame samples, which on a loaded machine
    # can land on the helper's next line, or miss the helper's frame altogether and leave the op on the
    # line that called it (seen once in a full suite run on two busy cores).
    matmul = line_of("train_basic.py", "c = a @ b")
    where = (mm["function"], mm["line"])
    assert mm["calls_per_step"] == 3
    assert where in {("helper", matmul), ("helper", matmul + 1), ("main", line_of("train_basic.py", "z = helper(y, w)"))}, where
    assert ops["aten::addmm"]["calls_per_step"] == 1 and ops["aten::addmm"]["line"] == line_of("train_basic.py", "y = model(x)")
    assert ops["aten::addmm"]["total_ms_per_step"] > ops["aten::addmm"]["self_ms_per_step"] > 0
    assert all(o["self_ms_per_step"] <= o["total_ms_per_step"] + 1e-3 for o in ops.values())
    assert 0.5 < sum(o["self_share"] for o in ops.values() if o["main_thread"]) <= 1.0 + 1e-3  # own times on one thread never overlap
    for name in ("trace.json.gz", "output.log", "agent.json", "profile.json"):
        assert f"href='{name}'" in (run_dir / "report.html").read_text(encoding="utf-8")
