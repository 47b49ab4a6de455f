"""Time and peak memory of ``torchtriage analyze`` on a large generated trace.

The trace is made from a real one: one recorded step of
``tests/data/runtime/traces/train_traced.py`` (CPU, ``with_stack=True``, torch.profiler
as a user runs it), or ``--source TRACE``.  Its events are repeated with shifted
timestamps until the file has ``--mb`` megabytes, packed into ``--steps`` steps
(real large traces hold few, long steps: 1-4 GB for 5-10 steps), and written the
way kineto writes: the operators first, then the Python frames, so the analysis
has to bring them together.  The frames that enclose the recorded step (the
script's ``<module>``, ``main``...) are written once, stretched over all of it.

``torchtriage analyze`` then runs in a child process (``--format json``, output
discarded), under a small wrapper process so that ``getrusage(RUSAGE_CHILDREN)``
sees only it: wall time and peak RSS.

    python bench/analyze_bench.py [--mb 1024] [--mb 200 ...] [--steps 10] [--gzip] [--results bench/RESULTS-analyze.md]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import child_cost  # bench/child_cost.py (the script's folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "data" / "runtime" / "traces" / "train_traced.py"


def record_source(folder: Path) -> Path:
    """One trace of the test script, recorded with plain torch.profiler."""
    trace = folder / "source.json"
    subprocess.run([sys.executable, str(SCRIPT), "--trace", str(trace)], check=True, capture_output=True)
    return trace


def load(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def template(data: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(events inside the first recorded step, X events enclosing it, the step's own range)."""
    events = data["traceEvents"]
    steps = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["ts"])
    if not steps:
        raise SystemExit("the source trace has no ProfilerStep# range")
    step = steps[0]
    low, high = step["ts"], step["ts"] + step["dur"]
    inside = [e for e in events if e is not step and e.get("ph") in ("X", "i") and "ts" in e
              and low <= e["ts"] and e["ts"] + e.get("dur", 0) <= high]
    enclosing = [e for e in events if e.get("ph") == "X" and e is not step and e["ts"] < low and e["ts"] + e.get("dur", 0) > high]
    return inside, enclosing, step


def write_trace(data: dict[str, Any], out: Path, megabytes: float, steps: int, compress: bool) -> dict[str, Any]:
    """Write the generated trace; returns its figures."""
    inside, enclosing, step = template(data)
    period = step["dur"] * 1.0001
    dumped = [json.dumps(e) for e in inside]
    per_copy = sum(len(s) + 2 for s in dumped)
    copies = max(steps, int(megabytes * 1e6 / per_copy))
    per_step = max(1, copies // steps)
    copies = per_step * steps
    header = {k: v for k, v in data.items() if k not in ("traceEvents", "traceName")}
    opener: Any = gzip.open if compress else open
    with opener(out, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(header)[:-1] + ', "traceEvents": [\n')
        first = True

        def emit(text: str) -> None:
            nonlocal first
            handle.write(text if first else ",\n" + text)
            first = False

        origin = step["ts"]
        for k in range(steps):
            ranged = copy.deepcopy(step)
            ranged["name"] = f"ProfilerStep#{k}"
            ranged["ts"] = origin + k * per_step * period
            ranged["dur"] = per_step * period * 0.9999
            emit(json.dumps(ranged))
        for python in (False, True):  # kineto's order: the operators and the rest first, the Python frames last
            for c in range(copies):
                shift = c * period
                for event, text in zip(inside, dumped):
                    if (event.get("cat") == "python_function") != python:
                        continue
                    moved = dict(event)
                    moved["ts"] = event["ts"] + shift
                    emit(json.dumps(moved))
        for event in enclosing:
            stretched = dict(event)
            stretched["dur"] = event["dur"] + copies * period
            emit(json.dumps(stretched))
        handle.write('\n], "traceName": "analyze_bench"}\n')
    return {"events": copies * len(inside) + steps + len(enclosing), "copies": copies, "steps": steps}


def measure(trace: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one ``torchtriage analyze`` in a child process."""
    return child_cost.measure([sys.executable, "-m", "torchtriage", "analyze", str(trace), "--out", str(out), "--format", "json",
                               "--quiet"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, action="append", help="trace size in MB (repeatable; default 1024)")
    parser.add_argument("--steps", type=int, default=10, help="steps in the generated trace (default 10)")
    parser.add_argument("--source", type=Path, help="the trace whose first step is repeated (default: record one)")
    parser.add_argument("--gzip", action="store_true", help="write the trace gzip-compressed")
    parser.add_argument("--results", type=Path, help="append the figures to this Markdown file")
    args = parser.parse_args()
    sizes = args.mb or [1024.0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="analyze-bench-") as tmp:
        folder = Path(tmp)
        data = load(args.source or record_source(folder))
        for megabytes in sizes:
            trace = folder / ("big.json.gz" if args.gzip else "big.json")
            start = time.perf_counter()
            figures = write_trace(data, trace, megabytes, args.steps, args.gzip)
            written = time.perf_counter() - start
            size = trace.stat().st_size / 1e6
            wall, peak = measure(trace, folder / f"run-{megabytes:g}")
            rows.append((size, figures, wall, peak))
            print(f"{size:.0f} MB{' (gzip)' if args.gzip else ''}, {figures['events']:,} events, {figures['steps']} steps "
                  f"(generated in {written:.0f} s): analyze {wall:.1f} s ({size / wall:.1f} MB/s, "
                  f"{figures['events'] / wall / 1e3:.0f}k events/s), peak RSS {peak:.0f} MiB", flush=True)
            trace.unlink()
    if args.results:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        with open(args.results, "a", encoding="utf-8") as handle:
            write_rows(handle, rows, machine, commit, args.gzip)


Row = tuple[float, dict[str, Any], float, float]  # (MB, figures, wall s, peak MiB)


def write_rows(handle: IO[str], rows: list[Row], machine: str, commit: str, compressed: bool) -> None:
    today = datetime.date.today().isoformat()
    for size, figures, wall, peak in rows:
        handle.write(f"| {today} | {commit} | {machine} | {size:.0f} MB{' gz' if compressed else ''} | {figures['events']:,} | "
                     f"{figures['steps']} | {wall:.1f} s | {size / wall:.1f} MB/s | {peak:.0f} MiB |\n")


if __name__ == "__main__":
    main()
