"""Real runs of a Dataset that sleeps a known time per sample: each line is charged what it took.

known_sleep.py logs every sleep (time.time_ns, the profiler's clock), so the time
really slept during the recorded steps is known however loaded the machine is.
The same runs check what ``torchtriage profile`` prints through a pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from run_support import DATA, FAST, agent_json, line_of, load_profile

pytestmark = pytest.mark.slow

SCRIPT = "known_sleep.py"
SLEEP = line_of(SCRIPT, "time.sleep(SLEEP_S)")
SLOTS = line_of(SCRIPT, "row = self.data[i] * row + 0.001")


def _profile(tmp: Path, workers: int) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    run, log = tmp / "run", tmp / "sleeps.log"
    env = dict(os.environ, COLUMNS="80")  # what a pipe gets when nothing says otherwise
    env.pop("FORCE_COLOR", None)
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(run), *FAST, str(DATA / SCRIPT), "--", str(workers), str(log)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc, run, log


def _slept_ms_per_step(run: Path, log: Path) -> float:
    """Time the Dataset spent in time.sleep inside the recorded steps, per step (all workers)."""
    steps = agent_json(run)["steps"]
    start, end = steps[0][1], steps[-1][2]
    total = 0
    for line in log.read_text().splitlines():
        a, b = map(int, line.split())
        total += max(0, min(b, end) - max(a, start))
    return total / 1e6 / len(steps)


def _line_ms(profile, line: int) -> float:
    n = len(profile.steps)
    return sum(c.self_us for c in profile.lines if c.path.endswith(SCRIPT) and c.line == line) / n / 1000


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory):
    return _profile(tmp_path_factory.mktemp("known_sleep0"), 0)


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory):
    return _profile(tmp_path_factory.mktemp("known_sleep2"), 2)


def test_the_sleep_line_is_charged_what_it_slept(in_process) -> None:
    _, run, log = in_process
    profile = load_profile(run)
    slept = _slept_ms_per_step(run, log)
    assert slept > 0
    # the operator-slot loop beside it is the function's own time: it must not land on the sleep line
    assert _line_ms(profile, SLEEP) == pytest.approx(slept, rel=0.2, abs=1.0)
    assert _line_ms(profile, SLOTS) > 0


def test_line_charges_add_up_to_at_most_the_measured_steps(in_process) -> None:
    profile = load_profile(in_process[1])
    cpu_lines = sum(c.self_us for c in profile.lines if c.device == "cpu")
    assert cpu_lines <= sum(s.duration_us for s in profile.steps) * 1.001
    assert len(profile.step_category_us) == len(profile.steps)
    for step, times in zip(profile.steps, profile.step_category_us):
        assert sum(times.values()) <= step.duration_us * 1.001
        assert times["data_loading"] > 0


def test_with_workers_the_sleep_line_gets_at_most_what_the_workers_slept(two_workers) -> None:
    _, run, log = two_workers
    profile = load_profile(run)
    assert profile.loader_workers == 2
    slept = _slept_ms_per_step(run, log)
    assert _line_ms(profile, SLEEP) <= slept * 1.2 + 1.0
    assert sum(c.self_us for c in profile.lines if c.device == "cpu") <= sum(s.duration_us for s in profile.steps) * 1.001


def test_piped_summary_shows_numbers_escaped_source_and_every_artefact(in_process) -> None:
    proc, run, _ = in_process
    out = proc.stdout
    report = json.loads((run / "report.json").read_text())
    assert "self.data[i]" in out  # rich markup would eat "[i]"
    table = out[out.index("Top ") :]
    for spot in report["hotspots"][:5]:
        assert f"{spot['self_ms_per_step']:.2f}" in table
        assert f"{spot['share'] * 100:.0f}%" in table
    assert "ms/step" in table and "share" in table
    for name in ("report.html", "report.json", "trace.json", "tb/", "profile.json", "agent.json", "output.log"):
        assert name in out, name
    # laid out for the 80 columns a pipe gets (the run folder path and evidence may be longer)
    top = table[: table.index("Try first")] if "Try first" in table else table
    assert all(len(line) <= 80 for line in top.splitlines())
