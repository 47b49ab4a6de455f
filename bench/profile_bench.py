"""Profiling overhead: the same steps run plain and under ``torchtriage profile``.

Both runs time the steps with the workload's own clock (``perf_counter`` around
each iteration), so the comparison is like for like: the plain run's steps
10-14, and in the profiled run the five steps the profiler records
(``--skip-first 6``: steps 10-14, after warm-up) with exact lines on
(stack tracing, memory, 1 ms frame sampling).  ``--full`` lets the profiled
script finish so it can report its own times.  Also shown: the recorded
``ProfilerStep`` spans.  Medians over ``--repeat`` runs.

    python bench/profile_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOAD = Path(__file__).resolve().parent / "profile_workload.py"
STEPS = 24
WINDOW = slice(9, 14)  # skip_first 6 + wait 1 + warmup 2: the profiler records steps 10..14
MODES = ("compute", "tiny", "loader")


def _steps(command: list[str], out: Path) -> list[float]:
    env = dict(os.environ, WORKLOAD_STEPS_OUT=str(out))
    subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.read_text())["steps"]


def plain(mode: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        steps = _steps([sys.executable, str(WORKLOAD), mode, str(STEPS)], Path(tmp) / "steps.json")
    return statistics.median(steps[WINDOW]) * 1e3


def profiled(mode: str) -> tuple[float, float]:
    """(the workload's own ms/step over the recorded steps, the recorded ProfilerStep spans)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--full", "--skip-first", "6",
                   "--out", str(run), str(WORKLOAD), "--", mode, str(STEPS)]
        steps = _steps(command, Path(tmp) / "steps.json")
        recorded = json.loads((run / "profile.json").read_text())["steps"]
        spans = statistics.median(s["end_us"] - s["start_us"] for s in recorded) / 1e3
    return statistics.median(steps[WINDOW]) * 1e3, spans


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'workload':10} {'plain ms/step':>14} {'profiled ms/step':>17} {'ratio':>6} {'recorded spans ms':>18}")
    for mode in MODES:
        base = statistics.median(plain(mode) for _ in range(args.repeat))
        runs = [profiled(mode) for _ in range(args.repeat)]
        prof = statistics.median(own for own, _ in runs)
        spans = statistics.median(span for _, span in runs)
        print(f"{mode:10} {base:14.2f} {prof:17.2f} {prof / base:6.2f} {spans:18.2f}")


if __name__ == "__main__":
    main()
