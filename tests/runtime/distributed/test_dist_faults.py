"""Multi-process faults: a rank that crashes, ranks that ignore SIGTERM, Ctrl-C, a rendezvous that never
completes, and launch options that cannot work.  Each ends with a clear status and no process left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dist_support import SCRIPT, dist_cli, free_port, processes_of_run, processes_with, rank_pids, report
from process_support import alive
from run_support import FAST

from torchtriage.runtime.distributed.finish import finish_ranks
from torchtriage.runtime.distributed.launch import DistOptions, TorchrunChild
from torchtriage.runtime.distributed.reap import marked_pids
from torchtriage.runtime.profiling.runner import RunOptions, run_agent

@pytest.mark.slow
def test_a_rank_that_crashes_is_named_with_its_traceback_and_the_others_are_stopped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = dist_cli(run, "--crash-rank", "1", "--crash-step", "3", options=("--active", "6"))
    assert proc.returncode == 1
    combined = report(run)
    status = combined["status"]
    assert status["status"] == "raised" and status["message"] == "rank 1: RuntimeError: rank 1 crashed on purpose at step 3"
    assert "ddp_train.py" in status["traceback"] and "crashed on purpose" in status["traceback"]
    assert combined["ranks"]["failed_rank"] == 1 and combined["bottleneck"]["kind"] == "none"
    rank0, rank1 = combined["ranks"]["per_rank"]
    assert rank1["status"]["status"] == "raised"
    assert "after rank 1 failed" in rank0["status"]["message"]  # gloo's error, or torchrun's SIGTERM
    assert "rank 1: RuntimeError: rank 1 crashed on purpose" in proc.stderr and "Traceback" in proc.stderr
    # A rank torchrun killed before it could save writes no agent.json (its message above still says why):
    # nothing of the run may be left either way.
    pids = rank_pids(run)
    assert pids and not any(alive(p) for p in pids)
    assert processes_of_run(run) == []


@pytest.mark.slow
def test_ranks_that_ignore_sigterm_are_killed_with_everything_they_started(tmp_path: Path) -> None:
    # rank 1 ignores SIGTERM and sleeps at its 3rd step; rank 0 blocks inside the next all-reduce waiting for
    # it: neither can stop by itself.  Ctrl-C (a real SIGINT to this process) once rank 1 is there.
    options = RunOptions(
        script=SCRIPT, args=["--hang-rank", "1", "--hang-step", "3", "--steps", "100"], out_dir=tmp_path / "run",
        python=sys.executable, skip_first=1, wait=0, warmup=1, active=50, timeout_s=300,
    )
    dist = DistOptions(nproc_per_node=2)
    timers: list[threading.Timer] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("rank") == 1 and event.get("event") == "step" and event.get("step") == 2 and not timers:
            timers.append(threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)))  # rank 1 is asleep by then
            timers[0].start()

    child = TorchrunChild(options, dist, on_event=on_event, grace_s=3.0)
    # As the CLI does (cli._interruptible): SIGINT raises here even if this test process inherited it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        outcome = run_agent(options, child=child)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert outcome.reason == "interrupted"
    assert sorted(child.rank_pids) == [0, 1]
    assert not any(alive(pid) for pid in child.rank_pids.values()) and not alive(outcome.pid)
    assert marked_pids(child.marker) == []  # nothing of the run is left, whatever its session
    run = finish_ranks(outcome, options, dist)
    assert run.profile.status.status == "interrupted"
    statuses = {e["rank"]: e["status"] for e in run.report["ranks"]["per_rank"]}
    assert statuses[1]["status"] == "killed" and "still running when the run was stopped" in statuses[1]["message"]


@pytest.mark.slow
def test_ctrl_c_stops_every_rank(tmp_path: Path) -> None:
    run = tmp_path / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--progress", "json", "--out", str(run),
               "--skip-first", "100000", "--nproc-per-node", "2", str(SCRIPT), "--", "--steps", "100000"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # the lead rank's steps arrive through the FIFO
        if '"waiting (step 3)"' in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    combined = report(run)
    assert combined["status"]["status"] == "interrupted"
    pids = rank_pids(run)  # the agents saved their state on torchrun's SIGTERM
    assert len(pids) == 2 and not any(alive(p) for p in pids)
    assert processes_with(str(run)) == []


@pytest.mark.slow
def test_a_rendezvous_that_never_completes_times_out_with_what_to_do(tmp_path: Path) -> None:
    port = free_port()
    run = tmp_path / "run"
    proc = dist_cli(run, nproc=1, options=("--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                                           "--master-port", str(port), "--no-step-timeout", "6"))
    assert proc.returncode == 1
    status = report(run)["status"]
    assert status["status"] == "no_steps"
    assert status["message"].startswith("no rank started within 6 s: torchrun is still waiting in the rendezvous for --nnodes 2")
    assert f"127.0.0.1:{port}" in status["message"]
    assert processes_with(f"--master-port={port}") == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--nproc-per-node", "1000"), "--nproc-per-node 1000 is more than this machine can run sensibly"),
        (("--nproc-per-node", "0"), "--nproc-per-node must be at least 1"),
        (("--nproc-per-node", "1", "--nnodes", "2"), "--nnodes above 1 needs --master-addr and --master-port"),
        (("--nproc-per-node", "1", "--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", "1", "--node-rank", "2"),
         "--node-rank 2 is not between 0 and --nnodes - 1 (1)"),
        (("--master-port", "29500"), "--master-port only apply to a multi-process run: add --nproc-per-node N"),
        (("--nproc-per-node", "2", "--show-rank", "2"), "--show-rank 2 is not a rank of this run (0..1)"),
    ],
)
def test_launch_options_that_cannot_work_are_usage_errors(tmp_path: Path, options: tuple[str, ...], message: str) -> None:
    command = [sys.executable, "-m", "torchtriage", "profile", "--out", str(tmp_path / "run"), *FAST, *options, str(SCRIPT)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "run").exists()  # nothing was started


@pytest.mark.slow
def test_a_missing_torch_in_the_interpreter_is_a_clear_error(tmp_path: Path) -> None:
    python = Path("/root/.pyenv/versions/3.10.13/bin/python")
    if not python.exists():
        pytest.skip("no interpreter without torch on this machine")
    run = tmp_path / "run"
    proc = dist_cli(run, options=("--python", str(python)))
    assert proc.returncode == 2
    status = json.loads((run / "report.json").read_text())["status"]
    assert status["status"] == "no_torch" and "cannot import torch" in status["message"]
