"""Run-folder outputs: chrome trace, TensorBoard logdir served by torch-tb-profiler, reports."""

from __future__ import annotations

import json
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


def test_trace_json_is_a_chrome_trace_with_the_recorded_steps(run: Path) -> None:
    data = json.loads((run / "trace.json").read_text())
    assert isinstance(data["traceEvents"], list) and data["traceEvents"]
    trace = load_trace(run / "trace.json")
    assert len(trace.steps) == len(load_profile(run).steps) == 3
    assert any(e.category == "cpu_op" for e in trace.events)


def test_profile_and_reports_are_written(run: Path) -> None:
    profile = load_profile(run)
    assert profile.status.status == "stopped_after_window"
    assert profile.extra["trace"] == str(run / "trace.json")
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


def test_tensorboard_profiler_plugin_loads_the_run(run: Path) -> None:
    logdir = run / "tb"
    traces = list(logdir.glob("*/*.pt.trace.json"))
    assert len(traces) == 1
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/data/plugin/pytorch_profiler"
    try:
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
        assert runs == [traces[0].parent.name]
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
        overview = json.loads(_get(f"{base}/overview?{query}"))
        assert "steps" in overview and overview["steps"]["rows"]
    finally:
        server.terminate()
        server.wait(timeout=10)
