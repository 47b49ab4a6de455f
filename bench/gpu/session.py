"""One GPU session: every CUDA path of torchtriage on the examples, the figures, and the artefacts, packed.

    python bench/gpu/session.py --out DIR [--work DIR] [--budget SECONDS] [--device cuda|cpu]

Run by ``bench/gpu/run.sh`` on the GPU machine (the ``device`` tool: one short
lease, so everything happens in one call, most important first, each part under
a timeout, and what is done is packed whatever runs out).  ``--device cpu``
rehearses the whole session on a CPU machine.

What it does, in order:
1. facts: GPU name, driver, torch and CUDA versions;
2. ``torchtriage profile --device cuda`` on every example (the run folders are
   the artefacts for ``tests/data/runtime/cuda/``);
3. profile overhead: each of a few examples under ``step_clock.py`` (the
   workload's own synchronised clock), plain and profiled, same steps;
4. step times before and after torchtriage's own fixes (``fix --unsafe-fixes``
   on a copy) and of the hand-tuned version in ``examples/tuned/``;
5. the lab on the examples, as far as time allows;
6. ``--memory-snapshot``, and a one-rank NCCL run;
7. ``diag``: where backward kernels sit in the profiler's event tree (``backward_walk.py``);
8. ``pytest``: the live-GPU tests (``-m cuda``), their output in ``logs/pytest.txt``, their runs in ``live_runs/``;
9. ``fixtures``: ``profile --device cuda`` on the runtime-findings fixtures' CUDA versions (``tests/data/runtime/gpu/``);
10. ``magic``: ``%%torchtriage`` on a CUDA cell in an IPython shell (``magic_cell.py``), its run in ``runs/magic_cell``.

Results: ``DIR/cuda_results.tar.gz`` (run folders without their full traces,
trimmed traces, ``figures.json``, ``facts.json``, ``log.txt``) and
``DIR/cuda_traces.tar.gz`` (full traces, as many as fit in 15 MB).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "data" / "runtime" / "gpu"  # the runtime-findings fixtures, CUDA versions
CLOCK = Path(__file__).resolve().parent / "step_clock.py"
# example -> steps its timed runs take (enough for the profiler's adaptive window and a steady median)
STEPS = {
    "sync_every_step": 60,
    "big_matmul": 40,
    "tiny_ops": 60,
    "slow_loader": 30,
    "graph_leak": 60,
    "device_moves": 40,
    "eval_no_grad": 30,
}
OVERHEAD = ("big_matmul", "tiny_ops", "sync_every_step", "slow_loader")
LAB_ORDER = ("big_matmul", "tiny_ops", "sync_every_step", "device_moves", "graph_leak", "slow_loader")
TRACE_BUDGET = 15 * 1024 * 1024
TRIM_LIMIT = 3 * 1024 * 1024


class Session:
    """The deadline, the log, and the figures gathered so far."""

    def __init__(self, work: Path, budget_s: float, args: argparse.Namespace) -> None:
        self.work = work
        self.deadline = time.monotonic() + budget_s
        self.device: str = args.device
        self.figures: dict[str, Any] = {"device": args.device, "profile": {}, "timing": {}, "lab": {}, "extra": {}}
        self.log_file = (work / "log.txt").open("a", encoding="utf-8")
        self.examples, self.timed, self.labs, self.fixtures = (split(names) for names in (args.examples, args.timed, args.labs, args.fixtures))
        self.lab_modes: str = args.lab_modes
        self.snapshot = not args.no_snapshot
        self.pytest_k: str = args.pytest_k

    def log(self, message: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {message}"
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, name: str, argv: list[str], timeout: float, cwd: Path | None = None) -> dict[str, Any]:
        """Run one command under the smaller of its timeout and the time left; its output goes to logs/NAME.txt."""
        budget = min(timeout, self.left() - 5)
        if budget < 10:
            self.log(f"skip {name}: {self.left():.0f} s left")
            return {"skipped": True}
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        started = time.monotonic()
        with (logs / f"{name}.txt").open("w", encoding="utf-8") as out:
            try:
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=budget, cwd=cwd or ROOT).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        seconds = round(time.monotonic() - started, 1)
        self.log(f"{name}: rc={rc} in {seconds} s")
        return {"rc": rc, "seconds": seconds}


def torchtriage(*args: str) -> list[str]:
    return [sys.executable, "-m", "torchtriage", *args]


def facts(session: Session) -> None:
    import torch

    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "python": sys.version.split()[0],
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device_name=props.name, memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count, capability=f"{props.major}.{props.minor}")
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        info["nvidia_smi"] = smi.stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        info["nvidia_smi"] = f"unavailable: {error}"
    (session.work / "facts.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    session.log(f"facts: {info}")


def profile_examples(session: Session) -> None:
    for name in session.examples:
        steps = STEPS[name]
        out = session.work / "runs" / name
        result = session.run(f"profile-{name}", torchtriage("profile", "--device", session.device, "--quiet", "--out", str(out),
                                                            str(EXAMPLES / f"{name}.py"), "--", "--steps", str(steps)), 120)
        report = _read_json(out / "report.json")
        if report:
            result.update(kind=report.get("bottleneck", {}).get("kind"), status=report.get("status", {}).get("status"),
                          step_ms=report.get("step_time_ms", report.get("step", {})))
            session.log(f"  {name}: verdict {result['kind']}")
        session.figures["profile"][name] = result


def clocked(session: Session, label: str, script: Path, steps: int, profiled: bool) -> dict[str, Any]:
    """One run of SCRIPT under the step clock, plain or under ``torchtriage profile --full``."""
    clock_out = session.work / "clock" / f"{label}.json"
    clock_out.parent.mkdir(exist_ok=True)
    args = [str(CLOCK), str(clock_out), str(script), "--steps", str(steps)]
    if profiled:
        argv = torchtriage("profile", "--device", session.device, "--quiet", "--full",
                           "--out", str(session.work / "overhead_runs" / label), *args[:1], "--", *args[1:])
    else:
        argv = [sys.executable, *args]
    result = session.run(f"clock-{label}", argv, 120)
    clock = _read_json(clock_out)
    if clock:
        result["clock"] = clock
    return result


def overhead(session: Session) -> None:
    for name in (n for n in OVERHEAD if n in session.timed):
        script = EXAMPLES / f"{name}.py"
        session.figures["timing"].setdefault(name, {})["before"] = clocked(session, f"{name}-before", script, STEPS[name], False)
        session.figures["timing"][name]["profiled"] = clocked(session, f"{name}-profiled", script, STEPS[name], True)


def fixes_and_tuned(session: Session) -> None:
    fixed_dir = session.work / "fixed"
    fixed_dir.mkdir(exist_ok=True)
    for name in session.timed:
        steps = STEPS[name]
        timing = session.figures["timing"].setdefault(name, {})
        if "before" not in timing:
            timing["before"] = clocked(session, f"{name}-before", EXAMPLES / f"{name}.py", steps, False)
        fixed = fixed_dir / f"{name}.py"
        shutil.copy(EXAMPLES / f"{name}.py", fixed)
        diff = subprocess.run(torchtriage("check", "--diff", "--unsafe-fixes", "--device", "cuda", "--no-config", str(fixed)),
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        (fixed_dir / f"{name}.diff").write_text(diff.stdout, encoding="utf-8")
        subprocess.run(torchtriage("check", "--fix", "--unsafe-fixes", "--device", "cuda", "--no-config", "--exit-zero", str(fixed)),
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
        if fixed.read_text(encoding="utf-8") != (EXAMPLES / f"{name}.py").read_text(encoding="utf-8"):
            timing["fixed"] = clocked(session, f"{name}-fixed", fixed, steps, False)
        else:
            timing["fixed"] = {"unchanged": True}
        tuned = EXAMPLES / "tuned" / f"{name}.py"
        if tuned.exists():
            timing["tuned"] = clocked(session, f"{name}-tuned", tuned, steps, False)


def labs(session: Session) -> None:
    for name in session.labs:
        out = session.work / "labs" / name
        result = session.run(f"lab-{name}", torchtriage("lab", "--quiet", "--modes", session.lab_modes, "--steps", "15", "--warmup", "3", "--timeout", "100",
                                                        "--out", str(out), str(EXAMPLES / f"{name}.py"), "--", "--steps", "40"), 200)
        lab = _read_json(out / "lab.json")
        if lab:
            result["lab"] = lab
        session.figures["lab"][name] = result


def extras(session: Session) -> None:
    helps = subprocess.run(torchtriage("profile", "--help"), capture_output=True, text=True, timeout=60, cwd=ROOT).stdout
    if "--memory-snapshot" in helps and session.snapshot:
        out = session.work / "runs" / "graph_leak_snapshot"
        result = session.run("profile-snapshot", torchtriage("profile", "--device", session.device, "--quiet", "--memory-snapshot",
                                                             "--out", str(out), str(EXAMPLES / "graph_leak.py"), "--", "--steps", "30"), 90)
        result["files"] = sorted(p.name for p in out.glob("*")) if out.exists() else []
        session.figures["extra"]["memory_snapshot"] = result
    if session.device == "cuda":
        out = session.work / "runs" / "ddp_nccl"
        result = session.run("profile-nccl", torchtriage("profile", "--device", "cuda", "--quiet", "--nproc-per-node", "1", "--out", str(out),
                                                         str(ROOT / "tests" / "data" / "runtime" / "ddp_train.py"), "--",
                                                         "--backend", "nccl", "--steps", "30"), 120)
        session.figures["extra"]["nccl"] = result


def fixtures(session: Session) -> None:
    for script in sorted(FIXTURES.glob("*.py")):
        if session.fixtures and script.stem not in session.fixtures:
            continue
        out = session.work / "runs" / script.stem
        timeout = 150 if script.stem == "reduce_overhead" else 90  # compilation
        result = session.run(f"profile-{script.stem}", torchtriage("profile", "--device", session.device, "--quiet", "--out", str(out),
                                                                   str(script), "--", "--steps", "40"), timeout)
        report = _read_json(out / "report.json")
        if report:
            result.update(kind=report.get("bottleneck", {}).get("kind"),
                          runtime_findings=sorted({f.get("code") for f in report.get("runtime_findings", [])}))
            session.log(f"  {script.stem}: verdict {result['kind']}, {result['runtime_findings']}")
        session.figures["profile"][script.stem] = result


def magic(session: Session) -> None:
    session.figures["extra"]["magic"] = session.run(
        "magic", [sys.executable, str(Path(__file__).resolve().parent / "magic_cell.py"), str(session.work / "runs" / "magic_cell"),
                  "--device", session.device], 120)


def diag(session: Session) -> None:
    session.figures["extra"]["backward_walk"] = session.run(
        "backward-walk", [sys.executable, str(Path(__file__).resolve().parent / "backward_walk.py"),
                          str(session.work / "backward_walk.json"), "--device", session.device], 60)


def live_tests(session: Session) -> None:
    os.environ["TORCHTRIAGE_LIVE_OUT"] = str(session.work / "live_runs")  # the tests' runs are packed with the others
    argv = [sys.executable, "-m", "pytest", "-m", "cuda", "-p", "no:cacheprovider", "-rA", "-q",
            "--junitxml", str(session.work / "pytest.xml"), "tests/runtime/cuda", *(["-k", session.pytest_k] if session.pytest_k else [])]
    session.figures["extra"]["pytest"] = session.run("pytest", argv, 300)


def trim_trace(source: Path, target: Path, steps: int = 2, drop: tuple[str, ...] = ()) -> bool:
    """Keep the metadata and the events of the first STEPS recorded steps (GPU work that runs late included),
    less the categories in DROP."""
    try:
        with gzip.open(source, "rt", encoding="utf-8") as handle:
            trace = json.load(handle)
    except (OSError, ValueError, EOFError):
        return False
    events = trace.get("traceEvents", [])
    marks = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in events
                   if re.fullmatch(r"ProfilerStep#\d+", str(e.get("name", ""))) and e.get("ph") == "X")
    if not marks:
        return False
    start, end = marks[0][0], marks[min(steps, len(marks)) - 1][1]
    end += end - start  # kernels queued in the window may finish after it
    trace["traceEvents"] = [e for e in events if e.get("ph") == "M" or (start <= float(e.get("ts", start)) <= end and e.get("cat") not in drop)]
    with gzip.open(target, "wt", encoding="utf-8") as handle:
        json.dump(trace, handle)
    return True


def pack(session: Session, out: Path) -> None:
    """Run folders, clock files and figures into one tarball; full traces into another, up to the budget."""
    out.mkdir(parents=True, exist_ok=True)
    (session.work / "figures.json").write_text(json.dumps(session.figures, indent=1, default=str), encoding="utf-8")
    traces: list[Path] = []
    for plain in session.work.glob("*runs/*/trace.json"):  # the magic's run writes its trace uncompressed
        with plain.open("rb") as source, gzip.open(plain.with_name("trace.json.gz"), "wb") as target:
            shutil.copyfileobj(source, target)
    for trace in sorted(session.work.glob("*runs/*/trace.json.gz")):
        if trace.stat().st_size <= TRIM_LIMIT:  # a big one takes a minute to parse: it travels whole or not at all
            trim_trace(trace, trace.with_name("trace_trimmed.json.gz"))
        traces.append(trace)
    with tarfile.open(out / "cuda_results.tar.gz", "w:gz") as tar:
        for path in sorted(session.work.rglob("*")):
            parts = path.relative_to(session.work).parts
            if not path.is_file() or path.name in ("trace.json.gz", "trace.json") or "tb" in parts:
                continue
            if parts[0] == "overhead_runs" and path.name not in ("report.json", "output.log"):
                continue  # the overhead runs are there for their clocks
            tar.add(path, arcname=str(path.relative_to(session.work)))
    used = 0
    with tarfile.open(out / "cuda_traces.tar.gz", "w:gz") as tar:
        for trace in sorted(traces, key=lambda p: p.stat().st_size):
            if used + trace.stat().st_size > TRACE_BUDGET:
                continue
            used += trace.stat().st_size
            tar.add(trace, arcname=str(trace.relative_to(session.work)))
    session.log(f"packed: {[(p.name, p.stat().st_size) for p in out.iterdir()]}")


def split(names: str) -> list[str]:
    return [n for n in names.split(",") if n]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/torchtriage-gpu"))
    parser.add_argument("--budget", type=float, default=380.0, help="seconds for everything before packing")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--parts", default="profile,overhead,fixes,extras,lab,diag,pytest")
    parser.add_argument("--examples", default=",".join(STEPS), help="examples to profile")
    parser.add_argument("--timed", default=",".join(STEPS), help="examples to time before and after fixes")
    parser.add_argument("--labs", default=",".join(LAB_ORDER), help="examples to run the lab on")
    parser.add_argument("--fixtures", default="", help="fixtures to profile (default: all of tests/data/runtime/gpu)")
    parser.add_argument("--lab-modes", default="fp32,bf16,bf16+compile")
    parser.add_argument("--no-snapshot", action="store_true")
    parser.add_argument("--pytest-k", default="", help="pytest -k expression for the live tests")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    session = Session(args.work, args.budget, args)
    parts = {"profile": profile_examples, "overhead": overhead, "fixes": fixes_and_tuned, "extras": extras, "lab": labs,
             "diag": diag, "pytest": live_tests, "fixtures": fixtures, "magic": magic}
    try:
        facts(session)
        for part in args.parts.split(","):
            if session.left() < 15:
                session.log(f"no time left for {part}")
                continue
            try:
                parts[part](session)
            except Exception as error:  # one broken part must not lose the others' results
                session.log(f"{part} failed: {type(error).__name__}: {error}")
    finally:
        pack(session, args.out)


if __name__ == "__main__":
    main()
