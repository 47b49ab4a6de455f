"""Real CPU runs through ``torchtriage profile``: memory at the peak, hand-written attention, and look-alikes.

Scripts in tests/data/runtime: adam_memory.py (Adam's state outweighs the rest), attention_train.py
(causal attention written out by hand), lookalike_train.py (a softmax classifier over an MLP: no
attention, no dominant state).  Lines and components are checked, never times."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from torchtriage.runtime.report.writer import load_report, load_schema
from torchtriage.runtime.report.summary import render_summary

from run_support import agent_json, line_of, profile_cli

pytestmark = pytest.mark.slow
SCRIPTS = {  # script -> profile options
    "adam_memory.py": (),
    "attention_train.py": ("--record-shapes", "on"),  # on a CPU run shapes are recorded only when asked for
    "lookalike_train.py": (),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    out = {}
    for script, options in SCRIPTS.items():
        proc, run_dir = profile_cli(tmp_path_factory.mktemp(script[:-3]), script, options=options)
        assert proc.returncode == 0, proc.stderr
        report = load_report(run_dir)
        jsonschema.validate(report, load_schema())
        out[script] = (report, run_dir)
    return out


def codes(report: dict[str, Any], key: str) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for f in report[key]:
        found.setdefault(f["code"], []).append(f)
    return found


def summary_text(report: dict[str, Any]) -> str:
    console = Console(file=StringIO(), width=160)
    console.print(render_summary(report))
    return console.file.getvalue()


def test_adam_state_dominates_memory_and_the_finding_says_what_to_do(runs: dict) -> None:
    report, run_dir = runs["adam_memory.py"]
    shape = report["memory_shape"]
    params = 2 * (2048 * 2048 + 2048) * 4  # two Linear(2048, 2048) in fp32
    c = shape["components"]
    assert c["parameters"] == params and c["gradients"] == params
    assert 2 * params <= c["optimizer_state"] <= 2 * params + 1024  # exp_avg, exp_avg_sq (+ the step counters)
    assert shape["dominant"] == "optimizer_state" and shape["optimizers"][0]["name"] == "Adam"
    [f] = codes(report, "runtime_findings")["TTR701"]
    temporaries = shape["optimizer_step_temporaries_bytes"]  # Adam's step builds its denominators, as large as the parameters
    assert temporaries >= params // 2
    assert f["line"] == line_of("adam_memory.py", "opt.step()")
    assert f["message"].startswith(f"optimizer state with its step's temporaries ({temporaries / 2**20:.1f} MiB) is ")
    actions = [r["action"] for r in f["recommendations"]]
    assert actions[0].startswith("Use 8-bit AdamW") and any("ZeroRedundancyOptimizer" in a for a in actions)
    assert "Memory at the peak:" in summary_text(report) and "TTR701" in summary_text(report)
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "class='chart memory-shape'" in html and "data-category='optimizer_state'" in html


def test_hand_written_attention_is_found_statically_and_costed_at_runtime(runs: dict) -> None:
    report, _ = runs["attention_train.py"]
    first, last = line_of("attention_train.py", "scores = q @ k"), line_of("attention_train.py", "out = weights @ v")
    [static] = codes(report, "static_findings")["TT508"]
    assert (static["line"], static["end_line"]) == (first, last) and static["line_share"] > 0
    [runtime] = codes(report, "runtime_findings")["TTR603"]
    assert runtime["line"] == first and runtime["name"] == "runtime-attention-not-sdpa"
    assert runtime["share"] == pytest.approx(static["line_share"], abs=1e-4)
    assert f"lines {first}-{last}" in runtime["message"] and "aten::" in runtime["message"]
    assert {e["line"] for e in runtime["evidence"] if e["line"]} <= set(range(first, last + 1))
    assert runtime["recommendations"][0]["action"].startswith("Compute it with F.scaled_dot_product_attention")


def test_the_agent_records_the_attention_matmul_shapes(runs: dict) -> None:
    _, run_dir = runs["attention_train.py"]
    rows = agent_json(run_dir)["shapes"]
    bmm = {(name, dtype, dims) for name, dtype, dims, *_ in rows if name == "aten::bmm"}
    # 16 sequences x 4 heads of 128 tokens, 16 dims per head: q @ kT, then weights @ v
    assert ("aten::bmm", "float32", "64x128x16,64x16x128") in bmm
    assert ("aten::bmm", "float32", "64x128x128,64x128x16") in bmm


def test_by_default_a_cpu_run_records_no_shapes(runs: dict) -> None:
    report, run_dir = runs["lookalike_train.py"]
    assert {dims for _, _, dims, *_ in agent_json(run_dir)["shapes"]} == {""}  # the ops are there, their sizes are not
    assert report["matmul_shapes"] == []


def test_look_alikes_stay_quiet(runs: dict) -> None:
    report, _ = runs["lookalike_train.py"]
    assert "TT508" not in codes(report, "static_findings")
    assert not set(codes(report, "runtime_findings")) & {"TTR603", "TTR701"}
    assert report["memory_shape"]["peak_bytes"] > 0  # measured, just nothing to act on
    for key in ("matmul_shapes", "gpu_idle_gaps"):
        assert isinstance(report[key], list)
    assert report["gpu_idle_gaps"] == [] and report["device_facts"]["compute_capability"] is None

