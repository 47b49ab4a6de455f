"""Run-folder outputs: chrome trace, TensorBoard logdir served by torch-tb-profiler, reports."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from run_support import load_profile, profile_cli

from torchtriage.runtime.trace import load_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc, run = profile_cli(tmp_path_factory.mktemp("outputs"), "train_basic.py")
    assert proc.returncode == 0, proc.stderr
    assert f"{run}" in proc.stdout.replace("\n", "")
    return run


def test_trace_is_one_compressed_chrome_trace_with_the_recorded_steps(run: Path) -> None:
    data = json.loads(gzip.decompress((run / "trace.json.gz").read_bytes()))
    assert isinstance(data["traceEvents"], list) and data["traceEvents"]
    trace = load_trace(run / "trace.json.gz")
    assert len(trace.steps) == len(load_profile(run).steps) == 3
    assert any(e.category == "cpu_op" for e in trace.events)
    assert not (run / "trace.json").exists() and not list(run.glob(".trace*"))  # one copy, no leftovers
    [linked] = list((run / "tb").glob("*/*.pt.trace.json.gz"))
    assert os.path.samefile(linked, run / "trace.json.gz")  # tb/ points at the same file

def test_profile_and_reports_are_written(run: Path) -> None:
    profile = load_profile(run)
    assert profile.status.status == "stopped_after_window"
    assert profile.extra["trace"] == str(run / "trace.json.gz")
    assert (run / "agent.json").exists() and (run / "output.log").exists()
    if (run / "report.json").exists():  # the report half may land separately
        assert json.loads((run / "report.json").read_text())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


class _TensorBoard:
    """tensorboard serving one logdir; ``overview()`` is the PyTorch Profiler plugin's Overview data."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}/data/plugin/pytorch_profiler"

    def __enter__(self) -> "_TensorBoard":
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(self.logdir), "--port", str(self.port), "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.terminate()
        self.server.wait(timeout=10)

    def overview(self) -> tuple[list, dict]:
        base = self.base
        runs: list = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                runs = json.loads(_get(f"{base}/runs"))["runs"]
                if runs:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(1)
        assert runs, "torch-tb-profiler listed no run"
        worker, span = None, None
        while time.monotonic() < deadline and worker is None:
            views = json.loads(_get(f"{base}/views?run={runs[0]}"))
            assert "Overview" in views
            workers = json.loads(_get(f"{base}/workers?run={runs[0]}&view=Overview"))
            if workers:
                worker = urllib.parse.quote(workers[0])
                span = json.loads(_get(f"{base}/spans?run={runs[0]}&worker={worker}"))
            else:
                time.sleep(1)
        assert worker is not None
        query = f"run={runs[0]}&worker={worker}" + (f"&span={span[0]}" if span else "")
        return runs, json.loads(_get(f"{base}/overview?{query}"))


def test_tensorboard_profiler_plugin_loads_the_run(run: Path) -> None:
    logdir = run / "tb"
    traces = list(logdir.glob("*/*.pt.trace.json.gz"))
    assert len(traces) == 1
    with _TensorBoard(logdir) as tensorboard:
        runs, overview = tensorboard.overview()
    assert runs == [traces[0].parent.name]
    assert "steps" in overview and overview["steps"]["rows"]


def test_tensorboard_overview_shows_the_data_loading_time_of_a_loader_bound_run(tmp_path: Path) -> None:
    """torch-tb-profiler counts DataLoader time only from cpu_op events named enumerate(DataLoader)#...__next__;
    torch writes them as user_annotation, which it drops (Overview: DataLoader 0 %).  The trace says cpu_op."""
    proc, run = profile_cli(tmp_path, "sleepy_loader.py")
    assert proc.returncode == 0, proc.stderr
    ours = load_profile(run)
    ours_share = ours.category_us["data_loading"] / sum(s.duration_us for s in ours.steps)
    with _TensorBoard(run / "tb") as tensorboard:
        _, overview = tensorboard.overview()
    [average] = overview["performance"]
    shares = {part["name"]: part["extra"] / 100 for part in average["children"]}
    assert ours_share > 0.2, ours_share  # the Dataset sleeps: a loader-bound run...
    assert shares["DataLoader"] == pytest.approx(ours_share, abs=0.1), (shares, ours_share)  # ...and TensorBoard agrees
