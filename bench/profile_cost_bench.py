"""End-to-end cost of ``torchtriage profile``: wall time, CPU time and run-folder size.

Each workload runs plain (``python script args``) and under ``torchtriage
profile`` with its defaults (the run stops after the recorded window), both
timed from the outside: wall clock, and the CPU seconds of the process tree
(user + sys, from ``RUSAGE_CHILDREN``), which is steadier than wall time on a
shared machine.  ``size MB`` is the run folder on disk (a file linked twice is
counted once).  Medians over ``--repeat`` runs.

Workloads: ``lab`` / ``lab-w2`` (bench/starvation_lab.py, 30 steps, no workers /
two workers: a sleeping Dataset with a per-pixel Python augmentation loop) and
the modes of bench/profile_workload.py (24 steps).

    python bench/profile_cost_bench.py [--repeat 3] [--only lab,compute] [--profile-args "--max-events 0"]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAB = HERE / "starvation_lab.py"
WORKLOAD = HERE / "profile_workload.py"
WORKLOADS = {
    "lab": (LAB, ["30", "0"]),
    "lab-w2": (LAB, ["30", "2"]),
    "compute": (WORKLOAD, ["compute", "24"]),
    "tiny": (WORKLOAD, ["tiny", "24"]),
    "loader": (WORKLOAD, ["loader", "24"]),
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``command`` and everything it started."""
    cpu, wall = _cpu(), time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - wall, _cpu() - cpu


def folder_mb(folder: Path) -> float:
    seen, total = set(), 0
    for root, _, files in os.walk(folder):
        for name in files:
            stat = os.lstat(os.path.join(root, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total / 1e6


def measure(name: str, repeat: int, profile_args: list[str]) -> dict[str, float]:
    script, args = WORKLOADS[name]
    plain_wall, plain_cpu, prof_wall, prof_cpu, sizes = [], [], [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu = timed([sys.executable, str(script), *args], Path(tmp))
            plain_wall.append(wall)
            plain_cpu.append(cpu)
            run = Path(tmp) / "run"
            command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", *profile_args, "--out", str(run), str(script), "--", *args]
            wall, cpu = timed(command, Path(tmp))
            prof_wall.append(wall)
            prof_cpu.append(cpu)
            sizes.append(folder_mb(run))
    med = statistics.median
    return {"plain_wall": med(plain_wall), "prof_wall": med(prof_wall), "plain_cpu": med(plain_cpu), "prof_cpu": med(prof_cpu), "mb": med(sizes)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    parser.add_argument("--profile-args", default="", help="extra options for torchtriage profile")
    args = parser.parse_args()
    print(f"{'workload':9} {'plain s':>8} {'profiled s':>10} {'ratio':>6} {'plain CPU s':>11} {'profiled CPU s':>14} {'CPU ratio':>9} {'size MB':>8}")
    for name in args.only.split(","):
        m = measure(name, args.repeat, shlex.split(args.profile_args))
        print(f"{name:9} {m['plain_wall']:8.1f} {m['prof_wall']:10.1f} {m['prof_wall'] / m['plain_wall']:6.2f} "
              f"{m['plain_cpu']:11.1f} {m['prof_cpu']:14.1f} {m['prof_cpu'] / m['plain_cpu']:9.2f} {m['mb']:8.1f}", flush=True)


if __name__ == "__main__":
    main()
