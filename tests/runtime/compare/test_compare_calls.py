"""Does ``torchtriage compare`` call the direction right?  Real CPU runs of small scripts of our own, profiled
the way the docs advise for a trustworthy call: ``compare --profile BEFORE AFTER --repeat 2`` (interleaved runs,
default adaptive window).  Identical runs, a placebo edit and a change smaller than the noise are "no
measurable change"; a vectorised loop is faster, with its interval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from compare_calls_bench import LOOPED, VECTORISED  # noqa: E402  (the bench's known speed-up: a Python loop, vectorised)

pytestmark = pytest.mark.slow

# Mostly sleeping: the step is ~40 ms whatever else the machine runs, as a data wait would be (one thread:
# with torch's pool of two, a CPU busy with other tests made the few ops wait for a core, 57 vs 45 ms a step).
STEADY = '''\
import time

import torch

torch.set_num_threads(1)
model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(60):
    time.sleep(SLEEP)
    loss = model(torch.ones(8, 32)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
'''


def torchtriage(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchtriage", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def compared(project: Path, before: str, after: str, name: str = "pair") -> dict:
    """compare.json of ``torchtriage compare --profile`` on two script texts (``before/train.py``, ``after/train.py``)."""
    first, second = project / "before" / "train.py", project / "after" / "train.py"
    for path, text in ((first, before), (second, after)):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    out = project / "runs" / name
    proc = torchtriage("compare", "--profile", str(first), str(second), "--repeat", "2", "--out", str(out), "--quiet", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "after" / "compare.json").read_text())


def steady(sleep: float = 0.04) -> str:
    return STEADY.replace("SLEEP", repr(sleep))


def test_the_same_script_twice_ten_times_over_is_no_change_at_least_nine_times(tmp_path: Path) -> None:
    calls = []
    for pair in range(10):
        c = compared(tmp_path, steady(), steady(), f"pair{pair}")
        step = c["step_time"]
        assert step["interval"]["runs"] == {"before": 2, "after": 2} and step["interval"]["steps"]["before"] >= 2 * 5
        calls.append(step["change"])
    assert calls.count("none") >= 9, calls


def test_a_placebo_edit_is_no_change(tmp_path: Path) -> None:
    placebo = steady().replace("    loss = model(", "    # the step, unchanged\n    total = model(").replace("    loss.backward()", "    total.backward()")
    assert placebo != steady()
    c = compared(tmp_path, steady(), placebo)
    assert c["step_time"]["change"] == "none", c["verdict"]["text"]
    assert c["verdict"]["text"].startswith("no measurable change")


def test_a_change_smaller_than_the_noise_is_never_called(tmp_path: Path) -> None:
    """0.4 ms more sleep on a 40 ms step (1%): under the floor and inside the runs' own noise."""
    c = compared(tmp_path, steady(0.04), steady(0.0404))
    assert c["step_time"]["change"] == "none", c["verdict"]["text"]


def test_a_vectorised_loop_is_faster_with_an_interval_beyond_the_floor(tmp_path: Path) -> None:
    c = compared(tmp_path, LOOPED, VECTORISED)
    step = c["step_time"]
    interval = step["interval"]
    assert step["change"] == "faster" and step["speedup"] > 2, c["verdict"]["text"]
    assert interval["high_ms"] < -step["threshold_ms"] and interval["low_ms"] <= step["delta_ms"] <= interval["high_ms"]
    assert f"{interval['steps']['before']} and {interval['steps']['after']} steps of 2 and 2 runs" in c["verdict"]["text"]
