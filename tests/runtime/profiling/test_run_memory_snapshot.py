"""``torchtriage profile --memory-snapshot``: the CUDA allocator's history over the window, saved in the run folder."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from run_support import FAST, agent_json, load_profile, profile_cli

from torchtriage.runtime.agent import memsnapshot
from torchtriage.runtime.agent.memsnapshot import CPU_WARNING, SNAPSHOT_NAME, MemorySnapshot
from torchtriage.runtime.profiling.finish import memory_snapshot

REPO = Path(__file__).resolve().parents[3]


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())


@pytest.mark.slow
def test_on_the_cpu_it_only_warns_and_the_run_completes(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "train_basic.py", options=("--memory-snapshot", "--device", "cpu"))
    assert proc.returncode == 0, proc.stderr
    report = _report(run)
    assert CPU_WARNING in report["warnings"]
    assert "warning: " + CPU_WARNING in proc.stderr.replace("\n", " ")  # shown like the other warnings
    assert report["status"]["status"] == "stopped_after_window" and report["steps_profiled"] == 3
    assert not (run / SNAPSHOT_NAME).exists()
    assert report["trace"]["memory_snapshot"] is None and report["memory"]["snapshot"] is None
    assert "memory_snapshot" not in agent_json(run)["meta"]


@pytest.mark.slow
def test_without_the_option_nothing_is_said(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "train_basic.py", options=("--device", "cpu"))
    assert proc.returncode == 0, proc.stderr
    assert CPU_WARNING not in _report(run)["warnings"]


def test_a_refused_history_is_a_warning_and_no_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no CUDA here")

    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", refuse)
    snapshot = MemorySnapshot(str(tmp_path))
    warning = snapshot.start()
    assert warning and "recording the CUDA memory history failed" in warning and "no CUDA here" in warning
    assert snapshot.start() is None  # tried once, not again every step
    assert snapshot.stop() is None and not snapshot.saved
    assert not (tmp_path / SNAPSHOT_NAME).exists()


def test_a_failed_dump_is_a_warning_and_the_history_is_still_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def dump(path: str) -> None:
        Path(path).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", lambda *a, **k: calls.append(k))
    monkeypatch.setattr(torch.cuda.memory, "_dump_snapshot", dump)
    snapshot = MemorySnapshot(str(tmp_path))
    assert snapshot.start() is None and snapshot.recording
    warning = snapshot.stop()
    assert warning and "saving the CUDA memory snapshot failed" in warning and "disk full" in warning
    assert calls == [{"max_entries": memsnapshot.MAX_ENTRIES}, {"enabled": None}]
    assert not snapshot.saved and not (tmp_path / SNAPSHOT_NAME).exists()  # the half-written file is gone


def test_a_dump_goes_into_the_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda.memory, "_dump_snapshot", lambda path: Path(path).write_bytes(pickle.dumps({"segments": []})))
    snapshot = MemorySnapshot(str(tmp_path))
    assert snapshot.start() is None and snapshot.stop() is None and snapshot.saved
    assert snapshot.stop() is None  # once
    assert memory_snapshot({"memory_snapshot": SNAPSHOT_NAME}, tmp_path) == tmp_path / SNAPSHOT_NAME


def test_the_host_takes_only_a_snapshot_that_the_agent_named_and_that_is_there(tmp_path: Path) -> None:
    assert memory_snapshot({}, tmp_path) is None
    assert memory_snapshot({"memory_snapshot": SNAPSHOT_NAME}, tmp_path) is None  # named, but not in the folder
    (tmp_path / SNAPSHOT_NAME).write_bytes(b"x")
    assert memory_snapshot({}, tmp_path) is None  # there, but not this run's
    assert memory_snapshot({"memory_snapshot": "/elsewhere/" + SNAPSHOT_NAME}, tmp_path) == tmp_path / SNAPSHOT_NAME


@pytest.mark.slow
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_run_saves_the_snapshot_and_the_report_links_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(run), *FAST, "--memory-snapshot",
               "--device", "cuda", str(REPO / "examples" / "graph_leak.py"), "--", "--steps", "20"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = run / SNAPSHOT_NAME
    assert path.is_file()
    with open(path, "rb") as handle:
        data = pickle.load(handle)
    assert isinstance(data, dict) and "segments" in data and data["segments"]
    report = _report(run)
    assert report["device"] == "cuda"
    assert report["trace"]["memory_snapshot"] == str(path) and report["memory"]["snapshot"] == str(path)
    assert not [w for w in report["warnings"] if "memory-snapshot" in w], report["warnings"]
    assert load_profile(run).extra["memory_snapshot"] == str(path)
    assert agent_json(run)["meta"]["memory_snapshot"] == SNAPSHOT_NAME
    assert "memory_snapshot.pickle" in (run / "report.html").read_text()
