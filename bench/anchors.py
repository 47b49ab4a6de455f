"""``make bench``: every anchor ratio the performance issue names, measured in one run, as one table.

Each row is one of our figures next to the anchor it is judged against, measured
in this same run on this machine (never a figure remembered from elsewhere):

* **profile cost**: ``torchtriage profile`` against the plain run (wall time,
  medians of ``--repeat``; the largest peak RSS of any one process of the
  profiled run; agent.json's size), on a light workload (``profile_workload.py
  tiny``), the heavy starvation lab (``starvation_lab.py``: each step makes
  ~85,000 Python calls, so its window's steps make ~450,000, more than the
  issue's lab's ~350,000 events; the row gives the count) with the defaults,
  which record such a window without Python frames, and again with
  ``--python-frames on`` and the window opened to ``HEAVY_EVENTS`` events (what
  the defaults did before), and a compute-bound one (``profile_workload.py compute``);
* **post-window stages** of the heavy lab against torch's own floor: the
  profiler's stop (its post-processing) and trace export, as the agent times
  them (agent.json ``meta``), then our walk of the event tree and the parent's
  work after the child ended;
* **check throughput**: ``torchtriage check`` over the static corpus
  (``bench/corpus.py``: pytorch/examples, timm, nanoGPT) on all cores, against
  ``ast.parse`` of the same files on one core, and TorchFix's CLI when it is
  installed;
* **typing**: the language server's edit p95 and first diagnostics on timm's
  ``train.py`` (``lsp_bench.py --in-repo``; needs its mirror);
* **trace analysis**: ``torchtriage analyze`` against traceinsight (HTA) 0.6.1 on
  the H100 trace here, when ``--hta-python`` names an interpreter that has it.

Rows whose inputs are missing (no mirrors, no HTA) say so instead of a figure.

    python bench/anchors.py [--repeat 3] [--hta-python /tmp/hta/bin/python] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from child_cost import measure  # noqa: E402  (bench/child_cost.py)
from profile_cost_bench import timed  # noqa: E402

HEAVY_EVENTS = 450_000  # the heavy lab's event budget with Python frames: its window records ~440k events (the lab: ~350k)
WORKLOADS = {
    "light": (HERE / "profile_workload.py", ["tiny", "24"], []),
    "heavy starvation lab": (HERE / "starvation_lab.py", ["30", "0"], []),
    "heavy starvation lab, Python frames on": (HERE / "starvation_lab.py", ["30", "0"],
                                               ["--python-frames", "on", "--max-events", str(HEAVY_EVENTS)]),
    "compute-bound": (HERE / "profile_workload.py", ["compute", "24"], []),
}


@dataclass
class Row:
    """One line of the table: what, ours, the anchor, the ratio and the target."""

    anchor: str
    ours: str
    against: str
    ratio: str = ""
    target: str = ""
    met: Optional[bool] = None


def _timed(command: list[str], cwd: Path) -> float:
    """Wall seconds of one run (``profile_cost_bench.timed``, which also gives its CPU time)."""
    return timed(command, cwd)[0]


def profile_rows(repeat: int) -> list[Row]:
    """Profile cost against the plain run per workload, and the heavy lab's post-window stages."""
    rows: list[Row] = []
    for name, (script, args, extra) in WORKLOADS.items():
        plain, profiled, peaks, sizes, metas, verdicts = [], [], [], [], [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                plain.append(_timed([sys.executable, str(script), *args], Path(tmp)))
                run = Path(tmp) / "run"
                command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", *extra, "--out", str(run), str(script), "--", *args]
                wall, peak = measure(command, Path(tmp))
                ended = time.time()
                profiled.append(wall)
                peaks.append(peak)
                sizes.append((run / "agent.json").stat().st_size / 1e6)
                meta = json.loads((run / "agent.json").read_text(encoding="utf-8"))["meta"]
                meta["parent_after_s"] = ended - float(meta.get("ended_at", ended))
                metas.append(meta)
                report = json.loads((run / "report.json").read_text(encoding="utf-8"))
                tops = ", ".join(f"{Path(str(h.get('path', ''))).name}:{h.get('line', '')} {float(h.get('share', 0)):.0%}"
                                 for h in (report.get("hotspots") or [])[:2])
                verdicts.append(f"{report['bottleneck']['kind']}, top lines {tops}")
        med = statistics.median
        ratio = med(profiled) / med(plain)
        events = int(med(m.get("events", 0) for m in metas))
        frames = all((m.get("window") or {}).get("python_frames", True) for m in metas)
        calls = int(med(int(m.get("events_per_plain_step") or 0) * int((m.get("window") or {}).get("recorded") or 0) for m in metas))
        volume = f"{events:,} events" if frames else f"{calls:,} Python calls in the window, recorded without frames: {events:,} events"
        rows.append(Row(f"profile, {name} ({volume}, {verdicts[-1]})", f"{med(profiled):.2f} s", f"plain run {med(plain):.2f} s",
                        f"{ratio:.2f}×", "≤ 1.3×", ratio <= 1.3))
        rows.append(Row(f"  largest process, {name}", f"{max(peaks):.0f} MiB", "", "", "≤ 600 MiB", max(peaks) <= 600))
        rows.append(Row(f"  agent.json, {name}", f"{max(sizes):.2f} MB", "", "", "≤ 2 MB", max(sizes) <= 2))
        if name.startswith("heavy"):
            if frames:
                rows += torch_floor_rows(int(metas[-1].get("active_steps") or 5))
            floor = med(float(m.get("stop_s", 0)) + float(m.get("export_s", 0)) for m in metas)
            for stage, key in (("walk of the event tree (agent)", "collect_s"), ("compressing the trace (agent)", "compress_wait_s"),
                               ("after the child ended (parent)", "parent_after_s")):
                value = med(float(m.get(key, 0)) for m in metas)
                rows.append(Row(f"  post-window: {stage}", f"{value:.2f} s", f"torch's stop + export {floor:.2f} s",
                                f"{value / floor:.2f}×"))
    return rows


def torch_floor_rows(steps: int) -> list[Row]:
    """Plain torch.profiler on the same lab and window (``torch_floor.py``): the time and memory no tool under it avoids."""
    out = subprocess.run([sys.executable, str(HERE / "torch_floor.py"), str(steps)], cwd=ROOT, capture_output=True, text=True, check=True)
    floor = json.loads(out.stdout.strip().splitlines()[-1])
    return [Row(f"  torch alone, same lab and window ({floor['events']:,} events, {floor['steps']} steps)",
                f"stop {floor['stop_s']:.2f} s + export {floor['export_s']:.2f} s", f"RSS {floor['rss_before_mib']} MiB before recording",
                "", f"its peak: {floor['peak_mib']} MiB")]


def check_rows(repeat: int) -> list[Row]:
    """``torchtriage check`` files/s on the corpus against one-core ``ast.parse``, and TorchFix when installed."""
    from static_bench import CORPUS, corpus_files, parse_rate  # bench/static_bench.py

    files = corpus_files(CORPUS) if CORPUS.is_dir() else []
    if not files:
        return [Row("check throughput", "no corpus", "run python bench/corpus.py (needs the mirrors)")]
    cli = [sys.executable, "-m", "torchtriage", "check", "--exit-zero", "--no-config", "--format", "json", str(CORPUS)]
    _timed(cli, ROOT)  # warm the file cache
    seconds = statistics.median(_timed(cli, ROOT) for _ in range(repeat))
    ours = len(files) / seconds
    floor = parse_rate(files, ast.parse, repeat)
    rows = [Row(f"check, {len(files)} files on {os.cpu_count()} cores", f"{ours:.0f} files/s", f"ast.parse, 1 core: {floor:.0f} files/s",
                f"{ours / floor:.2f}×", "≥ 0.6×", ours / floor >= 0.6)]
    if shutil.which("torchfix"):
        fix = statistics.median(_timed(["torchfix", "-j", str(os.cpu_count() or 1), str(CORPUS)], ROOT) for _ in range(1))
        rows.append(Row("  against TorchFix's CLI", f"{ours:.0f} files/s", f"TorchFix: {len(files) / fix:.1f} files/s",
                        f"{ours * fix / len(files):.1f}×"))
    return rows


def lsp_rows() -> list[Row]:
    """Edit p95 and first diagnostics on timm's train.py inside its repository."""
    if not (Path("/work/.mirror") / "huggingface+pytorch-image-models" / "repo").is_dir():
        return [Row("LSP edit p95, timm train.py", "no mirror", "fetch github:huggingface/pytorch-image-models")]
    out = subprocess.run([sys.executable, str(HERE / "lsp_bench.py"), "--file", "huggingface+pytorch-image-models:train.py", "--in-repo"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    figures = ast.literal_eval(next(line for line in out.splitlines() if line.startswith("{")))
    p95, first = figures["edit_p95_ms"], figures["first_open_ms"]
    return [Row(f"LSP edit p95, timm train.py ({figures['lines']} lines, in its repo)", f"{p95:.1f} ms", "", "", "≤ 25 ms", p95 <= 25),
            Row("  first diagnostics", f"{first:.0f} ms", "", "", "≤ 150 ms", first <= 150)]


def analyze_rows(hta_python: Optional[str], repeat: int) -> list[Row]:
    """``torchtriage analyze`` against HTA's load + temporal breakdown on the H100 trace here."""
    if not hta_python:
        return [Row("analyze vs traceinsight (HTA) 0.6.1", "not run", "pass --hta-python (a venv with traceinsight==0.6.1)")]
    from analyze_hta_bench import HTA, SOURCE, load, scale

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "trace"
        folder.mkdir()
        trace = folder / "rank0.pt.trace.json"
        scale(load(SOURCE), trace, 0)
        ours, theirs = [], []
        for run in range(repeat):
            ours.append(measure([sys.executable, "-m", "torchtriage", "analyze", str(trace), "--out", str(Path(tmp) / f"out{run}"),
                                 "--format", "json", "--quiet"]))
            theirs.append(measure([hta_python, "-c", HTA, str(folder)]))
    wall, hta_wall = statistics.median(w for w, _ in ours), statistics.median(w for w, _ in theirs)
    peak, hta_peak = max(p for _, p in ours), max(p for _, p in theirs)
    return [Row("analyze, H100 trace (6.8 MB)", f"{wall:.2f} s", f"HTA {hta_wall:.2f} s", f"{hta_wall / wall:.1f}× faster", "≥ 5×",
                hta_wall / wall >= 5),
            Row("  peak memory", f"{peak:.0f} MiB", f"HTA {hta_peak:.0f} MiB", f"{peak / hta_peak:.2f}×", "≤ 0.33×",
                peak / hta_peak <= 1 / 3)]


def table(rows: list[Row]) -> str:
    lines = ["| anchor | ours | against | ratio | target | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        met = "" if r.met is None else ("yes" if r.met else "**no**")
        lines.append(f"| {r.anchor} | {r.ours} | {r.against} | {r.ratio} | {r.target} | {met} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (medians)")
    parser.add_argument("--hta-python", help="an interpreter with traceinsight==0.6.1, for the analyze row")
    parser.add_argument("--markdown", type=Path, help="also write the table here, with the machine and commit")
    parser.add_argument("--only", default="profile,check,lsp,analyze", help="comma-separated parts")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    # An installed package has its bytecode (pip compiles it; HTA's does): with PYTHONDONTWRITEBYTECODE set, an
    # editable install would otherwise compile every module on every run it times.
    compileall.compile_dir(str(ROOT / "server" / "torchtriage"), quiet=1)
    rows: list[Row] = []
    for part, build in (("profile", lambda: profile_rows(args.repeat)), ("check", lambda: check_rows(args.repeat)),
                        ("lsp", lsp_rows), ("analyze", lambda: analyze_rows(args.hta_python, args.repeat))):
        if part in parts:
            print(f"measuring {part} ...", file=sys.stderr, flush=True)
            rows += build()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout
    dirty = " (with uncommitted changes)" if status.strip() else ""
    machine = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}; "
               f"commit {commit}{dirty}; {time.strftime('%Y-%m-%d %H:%M')}; medians of {args.repeat}")
    text = f"{machine}\n\n{table(rows)}"
    print(text)
    if args.markdown:
        args.markdown.write_text(f"# `make bench`\n\n{text}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
