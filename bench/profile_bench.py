"""Profiling overhead: the same steps run plain and under ``torchtriage profile``.

Plain: the workload's own per-step times for the steps that the profiler's
default schedule records (5th to 9th).  Profiled: the recorded step durations
in profile.json (exact lines: stack tracing + frame sampling on).  Prints the
median of each over several repetitions and their ratio.

    python bench/profile_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOAD = Path(__file__).resolve().parent / "profile_workload.py"
STEPS = 12
WINDOW = slice(4, 9)  # skip_first 1 + wait 1 + warmup 2 -> steps 5..9 are recorded


def plain(mode: str) -> float:
    out = subprocess.run([sys.executable, str(WORKLOAD), mode, str(STEPS)], capture_output=True, text=True, check=True).stdout
    steps = json.loads(out.strip().splitlines()[-1])["steps"]
    return statistics.median(steps[WINDOW]) * 1e3


def profiled(mode: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        subprocess.run(
            [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(run), str(WORKLOAD), "--", mode, str(STEPS)],
            capture_output=True, text=True, check=True,
        )
        profile = json.loads((run / "profile.json").read_text())
        return statistics.median(s["end_us"] - s["start_us"] for s in profile["steps"]) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'workload':10} {'plain ms/step':>14} {'profiled ms/step':>17} {'ratio':>6}")
    for mode in ("compute", "loader"):
        base = statistics.median(plain(mode) for _ in range(args.repeat))
        prof = statistics.median(profiled(mode) for _ in range(args.repeat))
        print(f"{mode:10} {base:14.2f} {prof:17.2f} {prof / base:6.2f}")


if __name__ == "__main__":
    main()
