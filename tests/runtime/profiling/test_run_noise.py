"""The profiler's own chatter is kept in output.log but not shown; the script's output is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from run_support import DATA

from torchtriage.runtime.profiling.noise import is_profiler_noise

SCRIPT = DATA / "chatty_train.py"


def test_profiler_markers_are_hidden_but_logged(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "torchtriage", "profile", "--out", str(run), str(SCRIPT)],
        capture_output=True, text=True, timeout=240,
    )
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert "hello from the script" in shown
    assert "profiler_start" not in shown and "CPUAllocator" not in shown
    log = (run / "output.log").read_text()
    assert "hello from the script" in log and "profiler_start" in log


def test_noise_patterns_match_only_profiler_lines() -> None:
    assert is_profiler_noise("USDT:2026-11-22 10:38:36 11139:11139 SyncActivityProfilerHandler.cpp:52] profiler_start")
    assert is_profiler_noise(
        "[W1122 10:38:48.070888130 CPUAllocator.cpp:245] Memory block of unknown size was allocated before "
        "the profiling started, profiler results will not include the deallocation event"
    )
    assert is_profiler_noise("STAGE:2024-09-04 18:43:09 17203:17203 ActivityProfilerController.cpp:312] Completed Stage: Warm Up")
    assert is_profiler_noise(
        "[W CPUAllocator.cpp:305] Memory block of unknown size was allocated before the profiling started, "
        "profiler results will not include the deallocation event"
    )
    assert not is_profiler_noise("profiler_start")  # a script may print this itself
    assert not is_profiler_noise("[W1122 10:38:48.07 Conv.cpp:10] a real warning from torch about the model")
