"""Post-run analysis time: torchtriage vs HolisticTraceAnalysis loading the same trace.

One ``torchtriage profile`` run of a small CNN with a Python-heavy Dataset
(``--active`` steps recorded, 20 by default) produces ``trace.json`` and the
agent's ``agent.json``.  Then, in this process, alternating and repeated:

* torchtriage, the CLI's post-run path: read agent.json and attribute it
  (``attribution.build_profile``), diagnose, build report.json, render
  report.html -- split into "attribution" and "diagnosis + reports".
* torchtriage, offline-trace path: the above plus reading and typing the
  exported trace (``trace.load_trace``), for comparison on the same file.
* HTA: ``TraceAnalysis(trace_dir=...)`` -- parsing the same trace.json into
  its dataframes, before any analysis.

Prints medians and ratios; ``--results FILE`` appends a Markdown row.

    python bench/trace_bench.py [--active 20] [--repeat 5] [--results bench/RESULTS-runtime-analysis.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Callable

WORKLOAD = textwrap.dedent(
    """
    import torch
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)


    class Images(Dataset):
        def __len__(self):
            return 100_000

        def __getitem__(self, i):
            img = torch.rand(3, 32, 32)
            for _ in range(4):  # per-sample Python augmentation
                img = img.flip(-1) if i % 2 else img * 0.98 + 0.01
            return img, i % 10


    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), *[torch.nn.Linear(512, 512) for _ in range(8)], torch.nn.Linear(512, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in DataLoader(Images(), batch_size=16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    """
)


def record(base: Path, active: int) -> Path:
    """Profile the workload once; returns the run folder (trace.json, agent.json)."""
    script = base / "cnn_workload.py"
    script.write_text(WORKLOAD, encoding="utf-8")
    run = base / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(run), "--active", str(active), str(script)]
    subprocess.run(command, check=True, capture_output=True, text=True, cwd=base)
    return run


def torchtriage_steps(run: Path) -> dict[str, Callable[[], str]]:
    """The post-run stages, each a callable (timed separately)."""
    from torchtriage.runtime.attribution.lines import build_profile
    from torchtriage.runtime.diagnosis.bottleneck import diagnose
    from torchtriage.runtime.report.html import render_html
    from torchtriage.runtime.results.profile_data import ProfileData
    from torchtriage.runtime.report.writer import build_report
    from torchtriage.runtime.trace import load_trace

    saved = ProfileData.load(run / "profile.json")  # status and extras as the CLI recorded them

    def attribution() -> str:
        raw = json.loads((run / "agent.json").read_text(encoding="utf-8"))
        profile = build_profile(raw, status=saved.status, extra=saved.extra)
        return f"{len(profile.lines)} line costs"

    def reports() -> str:
        report = build_report(saved, diagnose(saved, []), run)
        render_html(report)
        return f"verdict {report['bottleneck']['kind']}"

    def trace() -> str:
        return f"{len(load_trace(run / 'trace.json').events)} trace events"

    return {"attribution": attribution, "diagnosis+reports": reports, "load_trace": trace}


def hta_load(run: Path, base: Path) -> Callable[[], str] | None:
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        return None
    trace_dir = base / "hta"
    trace_dir.mkdir(exist_ok=True)
    shutil.copy(run / "trace.json", trace_dir / "rank0.pt.trace.json")
    logging.getLogger("hta").setLevel(logging.ERROR)

    def load() -> str:
        analysis = TraceAnalysis(trace_dir=str(trace_dir))
        return f"{len(analysis.t.get_trace(0))} rows"

    return load


def timed(fn: Callable[[], str]) -> tuple[float, str]:
    start = time.perf_counter()
    note = fn()
    return time.perf_counter() - start, note


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--active", type=int, default=20, help="profiled steps in the trace")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--results", type=Path, help="append a Markdown table row here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        run = record(base, args.active)
        size_mb = (run / "trace.json").stat().st_size / 1e6
        stages = torchtriage_steps(run)
        hta = hta_load(run, base)
        if hta is not None:
            stages["hta_load"] = hta
        times: dict[str, list[float]] = {name: [] for name in stages}
        notes: dict[str, str] = {}
        for _ in range(args.repeat):  # interleaved so machine load hits every stage alike
            for name, fn in stages.items():
                t, notes[name] = timed(fn)
                times[name].append(t)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    post_run = med["attribution"] + med["diagnosis+reports"]
    offline = post_run + med["load_trace"]
    print(f"trace.json {size_mb:.1f} MB, {args.active} steps, {args.repeat} repeats (medians), load avg {os.getloadavg()[0]:.1f}")
    for name in stages:
        print(f"  {name:18s} {med[name]:.3f} s  ({notes[name]})")
    print(f"  torchtriage post-run (attribution + diagnosis + reports): {post_run:.3f} s")
    print(f"  torchtriage incl. load_trace:                           {offline:.3f} s")
    if "hta_load" not in med:
        print("HolisticTraceAnalysis not installed: pip install --no-deps HolisticTraceAnalysis + networkx plotly pydot psutil")
        return 1
    hta_med = med["hta_load"]
    print(f"  HTA load / post-run: {hta_med / post_run:.1f}x   HTA load / incl. load_trace: {hta_med / offline:.1f}x")
    if args.results:
        row = (
            f"| {datetime.date.today()} | {platform.machine()} x{os.cpu_count()}, load {os.getloadavg()[0]:.1f} "
            f"| {size_mb:.1f} MB / {args.active} steps | {med['attribution']:.3f} | {med['diagnosis+reports']:.3f} "
            f"| {med['load_trace']:.3f} | {hta_med:.3f} | {hta_med / post_run:.1f}x | {hta_med / offline:.1f}x | {args.repeat} |\n"
        )
        with args.results.open("a", encoding="utf-8") as out:
            out.write(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
