"""Faults: each gets a clear status, keeps what was recorded, and leaves no process behind."""

from __future__ import annotations

import json

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from process_support import alive
from run_support import DATA, FAST, load_profile, profile_cli

from torchtriage.runtime.profiling.runner import RunOptions, run_agent

pytestmark = pytest.mark.slow
PY310 = Path("/root/.pyenv/versions/3.10.13/bin/python")



def test_script_that_raises_keeps_partial_window_and_traceback(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "faults.py", "raise", options=("--active", "10"))
    assert proc.returncode == 1
    profile = load_profile(run)
    assert profile.status.status == "raised"
    assert "ValueError: boom at step 6" in profile.status.traceback and "faults.py" in profile.status.traceback
    assert 1 <= len(profile.steps) < 10 and (run / "trace.json.gz").exists()
    assert "boom at step 6" in proc.stderr
    report = json.loads((run / "report.json").read_text())
    assert report["bottleneck"]["kind"] == "none"  # no verdict from a cut-short window...
    assert sum(report["breakdown"].values()) == pytest.approx(1.0, abs=1e-3)  # ...but what was recorded is shown
    assert report["hotspots"]


def test_script_that_exits_early(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "faults.py", "exit")
    assert proc.returncode == 1
    profile = load_profile(run)
    assert profile.status.status == "exited" and profile.status.exit_code == 3
    assert "sys.exit(3)" in profile.status.message


def test_script_that_never_steps_is_stopped(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "faults.py", "never", options=("--no-step-timeout", "4"))
    assert proc.returncode == 1
    profile = load_profile(run)
    assert profile.status.status == "no_steps"
    assert "no optimizer step or loader iteration seen in 4 s" in profile.status.message


def test_syntax_error_and_missing_torch_cannot_run(tmp_path: Path) -> None:
    proc, run = profile_cli(tmp_path, "syntax_error.py")
    assert proc.returncode == 2
    assert load_profile(run).status.status == "syntax_error" and "syntax error" in proc.stderr
    if PY310.exists():
        (tmp_path / "py310").mkdir()
        proc, run = profile_cli(tmp_path / "py310", "train_basic.py", options=("--python", str(PY310)))
        assert proc.returncode == 2
        status = load_profile(run).status
        assert status.status == "no_torch" and "cannot import torch" in status.message


def test_a_syntax_error_the_running_script_raises_is_raised_not_syntax_error(tmp_path: Path) -> None:
    # ast.literal_eval of an unquoted string argument raises SyntaxError from the script's own line: it ran
    proc, run = profile_cli(tmp_path, "faults.py", "literal", "two words")
    assert proc.returncode == 1
    status = load_profile(run).status
    assert status.status == "raised", status
    assert status.message.startswith("SyntaxError:") and "faults.py" in status.traceback
    # so does an import of a module that does not parse: the script ran up to that import
    (tmp_path / "broken_module.py").write_text("def f(:\n    pass\n")
    (tmp_path / "imports_broken.py").write_text("import torch\nimport broken_module\n")
    out = tmp_path / "run2"
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), "imports_broken.py"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    status = load_profile(out).status
    assert proc.returncode == 1 and status.status == "raised" and "broken_module.py" in status.traceback, (proc.stderr, status)


def test_timeout_kills_the_whole_group_and_keeps_the_window(tmp_path: Path) -> None:
    options = RunOptions(
        script=DATA / "faults.py", args=["hang"], out_dir=tmp_path / "run", python=sys.executable,
        skip_first=1, wait=0, warmup=1, active=3, full=True, timeout_s=20,
    )
    outcome = run_agent(options)
    assert outcome.reason == "timeout" and "--timeout 20" in outcome.message
    assert not alive(outcome.pid) and _group_members(outcome.pid) == []
    # the agent saved what it had on SIGTERM: the full window unless a loaded machine made start-up slower than 20 s
    assert outcome.agent is not None and outcome.agent["status"]["status"] in ("completed", "killed")
    assert outcome.agent["meta"]["steps_seen"] >= 1


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("started", ["plainly", "with SIGINT ignored"])
def test_ctrl_c_stops_the_run_keeps_what_was_recorded_and_leaves_nothing(tmp_path: Path, started: str) -> None:
    """SIGINT to the CLI (what Ctrl-C in a terminal, or an editor's cancel, sends it) while the script hangs
    after its window; also when the CLI inherits SIGINT ignored (``nohup``, a background job, an editor or a
    Jupyter server started that way), as Python then leaves it ignored."""
    import signal
    import subprocess

    out = tmp_path / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--progress", "json", "--full", "--out", str(out),
               *FAST, str(DATA / "faults.py"), "--", "hang"]
    cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                           preexec_fn=_ignore_sigint if started != "plainly" else None)
    watchdog = threading.Timer(120, cli.kill)  # never hang the suite
    watchdog.start()
    assert cli.stdout is not None
    for line in cli.stdout:  # --progress json: one event per line
        event = json.loads(line) if line.startswith("{") else {}
        if str(event.get("message", "")).startswith("analysing"):
            break  # the window is recorded; the script goes on to hang in step 6
    time.sleep(2.0)
    script = [pid for pid in _pids() if _parent(pid) == cli.pid and str(DATA / "faults.py") in _cmdline(pid)]
    assert script, "the profiled script is running"
    cli.send_signal(signal.SIGINT)
    cli.communicate(timeout=60)
    watchdog.cancel()
    assert cli.returncode == 1  # the script did not finish: what was recorded is written
    assert all(not alive(pid) for pid in script)
    profile = load_profile(out)
    assert profile.status.status == "interrupted" and "Ctrl-C" in profile.status.message
    assert len(profile.steps) == 3 and (out / "report.json").exists()


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace").replace("\0", " ")
    except OSError:
        return ""


def test_loader_workers_do_not_outlive_the_run(tmp_path: Path) -> None:
    options = RunOptions(script=DATA / "sleepy_loader.py", args=["2"], out_dir=tmp_path / "run", python=sys.executable,
                         skip_first=1, wait=0, warmup=1, active=2)
    outcome = run_agent(options)
    assert outcome.returncode == 0 and outcome.agent["status"]["status"] == "stopped_after_window"
    assert _group_members(outcome.pid) == []  # the DataLoader workers went with the child


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``, after a short grace."""
    deadline = time.monotonic() + 3.0
    while True:
        members = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if fields[0] != "Z" and int(fields[2]) == pgid:
                    members.append(int(entry))
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.1)
