"""--nproc-per-node 2 for real: torchrun, gloo on CPU, rank 1's Dataset slowed; one combined report names it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from dist_support import SCRIPT, TbCache, dist_cli, report

from torchtriage.runtime.report.writer import SCHEMA_VERSION, load_schema
from torchtriage.runtime.trace import load_trace

pytestmark = pytest.mark.slow
SLOW_MS = 30.0


@pytest.fixture(scope="module")
def slowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("ranks") / "run"
    proc = dist_cli(out, "--slow-rank", "1", "--slow-ms", f"{SLOW_MS:g}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, out


def test_every_rank_gets_its_folder_and_the_run_one_combined_report(slowed: tuple[Any, Path]) -> None:
    _, run = slowed
    combined = report(run)
    schema = load_schema()
    jsonschema.validate(combined, schema)
    assert combined["schema_version"] == SCHEMA_VERSION == "1.3"
    ranks = combined["ranks"]
    assert ranks["covered"] == [0, 1] and ranks["world_size"] == 2 and ranks["shown_rank"] == 0 and ranks["backend"] == "gloo"
    for entry in ranks["per_rank"]:
        folder = run / f"rank{entry['rank']}"
        own = report(folder)
        jsonschema.validate(own, schema)
        assert "ranks" not in own and own["steps_profiled"] == entry["steps_profiled"] == 3
        assert entry["status"]["status"] == "stopped_after_window" and entry["local_rank"] == entry["rank"]
        assert entry["report"] == str(folder / "report.json") and Path(entry["trace"]).is_file()
        meta = json.loads((folder / "agent.json").read_text())["meta"]
        assert meta["rank"]["rank"] == entry["rank"] and meta["rank"]["world_size"] == 2 and meta["rank"]["pid"] == entry["pid"]
    assert combined["trace"]["chrome_traces"] == [str(run / "rank0" / "trace.json.gz"), str(run / "rank1" / "trace.json.gz")]
    assert combined["trace"]["tensorboard_logdir"] == str(run / "tb")
    # the top-level fields are rank 0's report
    assert combined["step_times_ms"] == report(run / "rank0")["step_times_ms"]
    assert combined["status"]["status"] == "stopped_after_window"


def test_the_slowed_rank_is_named_as_the_straggler_with_data_loading(slowed: tuple[Any, Path]) -> None:
    _, run = slowed
    ranks = report(run)["ranks"]
    [straggler] = ranks["stragglers"]  # rank 0, which only waits for it, is not one
    assert straggler["rank"] == 1 and straggler["category"] == "data_loading"
    assert straggler["slower_steps"] >= 2 and straggler["steps"] == 3
    assert SLOW_MS / 2 < straggler["gap_ms"] < SLOW_MS * 3 and SLOW_MS / 2 < straggler["category_gap_ms"]
    rank0, rank1 = ranks["per_rank"]
    assert rank1["data_loading_share"] > 0.4 and rank1["bottleneck"] == "data_loading"
    # rank 0 spends the gap waiting in the all-reduce: communication, not its own work
    assert rank0["communication_share"] > 0.4 and rank0["bottleneck"] == "communication"
    assert rank0["busy_ms"] < rank1["busy_ms"] - SLOW_MS / 2
    assert rank0["communication"]["source"] == "gloo threads" and rank0["communication"]["allreduces_per_step"] == 1
    assert rank0["communication"]["in_flight_ms"] > rank1["communication"]["in_flight_ms"]


def test_the_verdict_leads_with_the_straggler(slowed: tuple[Any, Path]) -> None:
    proc, run = slowed
    combined = report(run)
    assert combined["bottleneck"]["evidence"][0]["text"].startswith("rank 1 is a straggler")
    assert combined["bottleneck"]["recommendations"][0]["action"].startswith("Make rank 1 as fast as the others: its data loading")
    assert "rank 1 is a straggler" in proc.stdout and "Ranks on this node (2 of world size 2" in proc.stdout
    # the waiting line is the backward call, charged to communication
    top = combined["hotspots"][0]
    assert top["category"] == "communication" and top["source"] == "loss.backward()" and top["path"] == str(SCRIPT)
    html = (run / "report.html").read_text()
    assert "<table class='ranks'>" in html and "href='rank1/report.html'" in html and "rank 1 is a straggler" in html


def test_each_rank_trace_opens_and_tensorboard_sees_one_worker_per_rank(slowed: tuple[Any, Path], tmp_path: Path) -> None:
    _, run = slowed
    host = json.loads((run / "rank0" / "agent.json").read_text())["meta"]["rank"]["host"].replace("_", "-")
    tb = run / "tb" / "run"
    assert sorted(p.name for p in tb.iterdir()) == [f"{host}_0.pt.trace.json.gz", f"{host}_1.pt.trace.json.gz"]
    for rank in (0, 1):
        trace = run / f"rank{rank}" / "trace.json.gz"
        assert os.path.samefile(tb / f"{host}_{rank}.pt.trace.json.gz", trace)  # a link, not a copy
        names = {e.name for e in load_trace(trace).events}
        assert "gloo:all_reduce" in names and "c10d::allreduce_" in names
    if importlib.util.find_spec("torch_tb_profiler") is None:
        pytest.skip("torch-tb-profiler is not installed")
    from torch_tb_profiler.profiler.loader import RunLoader

    loaded = RunLoader("run", str(tb), TbCache(tmp_path)).load()
    assert loaded.workers == ["All", f"{host}_0", f"{host}_1"]
    assert "distributed" in [view.name for view in loaded.views]  # the Distributed view compares the two ranks


def test_without_active_every_rank_records_the_same_fixed_window(tmp_path: Path) -> None:
    """Ranks step together: an adaptive window per rank would let one stop while the others wait in a collective."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), "--skip-first", "1", "--wait", "0",
               "--warmup", "1", "--nproc-per-node", "2", str(SCRIPT)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in (0, 1):
        window = report(out / f"rank{rank}")["window"]
        assert window == {"adaptive": False, "steps": 5, "ended_by": "", "half_width": None, "target_half_width": None,
                          "python_frames": True}
