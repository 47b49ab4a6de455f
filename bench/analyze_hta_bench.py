"""``torchtriage analyze`` against traceinsight (HTA) 0.6.1 on the same real GPU trace, in the same run.

Each trace is a real one (default: recorded on an H100, ``tests/data/runtime/cuda/big_matmul``;
``--source``, repeatable, for others: the larger real GPU traces in HTA's own test data, MIT, are
fetched with ``bench/fetch_hta_traces.sh``), used as it is and scaled up: all of its timed events (CPU ops, Python
frames, runtime calls, the GPU's kernels, copies and flows) are repeated with shifted
timestamps, step numbers, correlation ids and flow ids until the file has ``--mb``
megabytes.  On each trace, alternating and ``--repeat`` times:

* torchtriage: ``torchtriage analyze TRACE --format json`` (verdict, lines, report.json and
  report.html written);
* HTA: ``TraceAnalysis(trace_dir=FOLDER)`` (loading and parsing) and
  ``get_temporal_breakdown()`` (its first analysis) -- the least HTA does to say anything.

Each runs in a child process under a wrapper whose ``getrusage(RUSAGE_CHILDREN)`` gives its
wall time and peak RSS.  HTA runs in an interpreter that has ``traceinsight`` installed
(``--hta-python``; make one with ``python -m venv /tmp/hta && /tmp/hta/bin/pip install
traceinsight==0.6.1``); it is never a dependency of torchtriage.

    python bench/analyze_hta_bench.py --hta-python /tmp/hta/bin/python [--mb 0 --mb 200] [--repeat 3]
        [--source TRACE ...] [--results bench/RESULTS-analyze.md]
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from child_cost import measure  # bench/child_cost.py (the script's folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "runtime" / "cuda" / "big_matmul" / "trace.json.gz"
HTA = """
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False)
assert len(breakdown) >= 1, breakdown
"""


def load(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _ids(event: dict[str, Any]) -> int:
    args = event.get("args") or {}
    return max(int(event.get("id", 0) or 0), int(args.get("correlation", 0) or 0), int(args.get("External id", 0) or 0))


def scale(data: dict[str, Any], out: Path, megabytes: float) -> dict[str, int]:
    """Write ``data`` with its first step repeated until the file has ``megabytes`` (0: the trace as it is)."""
    events = data["traceEvents"]
    if megabytes <= 0:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
        return {"events": len(events), "steps": steps}
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    metadata = [e for e in events if e.get("ph") == "M"]
    step_numbers = [int(str(e["name"])[len("ProfilerStep#"):]) for e in timed if str(e.get("name", "")).startswith("ProfilerStep#")]
    step_span = max(step_numbers, default=0) + 1
    id_span = max(_ids(e) for e in timed) + 1
    per_copy = sum(len(json.dumps(e)) + 2 for e in timed)
    copies = max(1, int(megabytes * 1e6 / per_copy))
    low = min(float(e["ts"]) for e in timed)
    period = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - low + 100.0
    header = {k: v for k, v in data.items() if k not in ("traceEvents", "traceName")}
    written = 0
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(header)[:-1] + ', "traceEvents": [\n')
        parts = [json.dumps(e) for e in metadata]
        for c in range(copies):
            shift = c * period
            for event in timed:
                moved = dict(event, ts=float(event["ts"]) + shift)
                name = str(event.get("name", ""))
                if name.startswith("ProfilerStep#"):  # the CPU's step range and the GPU's mirror of it
                    moved["name"] = f"ProfilerStep#{int(name[len('ProfilerStep#'):]) + c * step_span}"
                if "id" in event and event.get("ph") in ("s", "f"):
                    moved["id"] = int(event["id"]) + c * id_span
                args = event.get("args")
                if isinstance(args, dict) and ("correlation" in args or "External id" in args):
                    moved["args"] = dict(args)
                    for key in ("correlation", "External id"):
                        if key in args:
                            moved["args"][key] = int(args[key]) + c * id_span
                parts.append(json.dumps(moved))
            if len(parts) > 50_000:
                written += len(parts)
                handle.write(",\n".join(parts) + ",\n")
                parts = []
        written += len(parts)
        handle.write(",\n".join(parts) + '\n], "traceName": "analyze_hta_bench"}\n')
    return {"events": written, "steps": copies * step_span}


def _name(source: Path) -> str:
    """The trace's name for the table: its path in this checkout, else its file name."""
    try:
        return str(source.resolve().relative_to(ROOT))
    except ValueError:
        return source.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", required=True, help="an interpreter with traceinsight==0.6.1 installed")
    parser.add_argument("--source", type=Path, action="append",
                        help="a real GPU trace (repeatable; default: the H100 big_matmul trace)")
    parser.add_argument("--mb", type=float, action="append",
                        help="trace size in MB, 0: the source as it is (repeatable; default 0 and 200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool per trace, alternating (default 3)")
    parser.add_argument("--results", type=Path, help="append a Markdown table to this file")
    args = parser.parse_args()
    sources = args.source or [SOURCE]
    # Both tools start from byte-compiled modules, as an install leaves them (pip compiles what it
    # installs; this checkout's sources are compiled here, in __pycache__, which git ignores).
    compileall.compile_dir(str(ROOT / "server" / "torchtriage"), quiet=1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="analyze-hta-") as tmp:
        for index, megabytes, source in ((i, mb, src) for i, src in enumerate(sources) for mb in args.mb or [0.0, 200.0]):
            data = load(source)
            folder = Path(tmp) / f"trace-{index}-{megabytes:g}"
            folder.mkdir()
            trace = folder / "rank0.pt.trace.json"
            figures = scale(data, trace, megabytes)
            size = trace.stat().st_size / 1e6
            ours, theirs = [], []
            for run in range(args.repeat):
                out = Path(tmp) / f"out-{index}-{megabytes:g}-{run}"
                ours.append(measure([sys.executable, "-m", "torchtriage", "analyze", str(trace), "--out", str(out), "--format", "json",
                                     "--quiet"]))
                theirs.append(measure([args.hta_python, "-c", HTA, str(folder)]))
                shutil.rmtree(out, ignore_errors=True)
            row = (_name(source), size, figures, statistics.median(w for w, _ in ours), max(p for _, p in ours),
                   statistics.median(w for w, _ in theirs), max(p for _, p in theirs))
            rows.append(row)
            print(f"{row[0]}: {size:.1f} MB, {figures['events']:,} events, {figures['steps']} steps: torchtriage analyze "
                  f"{row[3]:.2f} s, {row[4]:.0f} MiB; HTA load + temporal breakdown {row[5]:.2f} s, {row[6]:.0f} MiB; "
                  f"{row[5] / row[3]:.1f}x faster, {row[4] / row[6]:.2f}x the memory", flush=True)
            trace.unlink()
    if args.results:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        with open(args.results, "a", encoding="utf-8") as handle:
            handle.write(f"\n`python bench/analyze_hta_bench.py --repeat {args.repeat}`, {datetime.date.today().isoformat()}, "
                         f"commit {commit}, {machine}; medians of {args.repeat} alternating runs (time), the largest peak RSS:\n\n"
                         "| source | trace | events | steps | torchtriage analyze | peak RSS | HTA load + breakdown | peak RSS | speed "
                         "| memory |\n|---|---|---|---|---|---|---|---|---|---|\n")
            for name, size, figures, wall, peak, hta_wall, hta_peak in rows:
                handle.write(f"| {name} | {size:.1f} MB | {figures['events']:,} | {figures['steps']} | {wall:.2f} s | {peak:.0f} MiB | "
                             f"{hta_wall:.2f} s | {hta_peak:.0f} MiB | {hta_wall / wall:.1f}× faster | {peak / hta_peak:.2f}× |\n")


if __name__ == "__main__":
    main()
