"""The profiler's own chatter is kept in output.log but not shown; the script's output is."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from torchtriage.runtime.noise import is_profiler_noise

SCRIPT = """
import sys
import torch

print("hello from the script", file=sys.stderr)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(40):
    loss = model(torch.randn(4, 8)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_profiler_markers_are_hidden_but_logged(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "torchtriage", "profile", "--out", str(run), str(script)],
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
    assert not is_profiler_noise("profiler_start")  # a script may print this itself
    assert not is_profiler_noise("[W1122 10:38:48.07 Conv.cpp:10] a real warning from torch about the model")
