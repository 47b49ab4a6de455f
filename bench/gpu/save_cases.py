"""Keep a GPU session's run folders as test data: ``tests/data/runtime/cuda/<case>/``.

    python bench/gpu/save_cases.py SESSION_DIR [SESSION_DIR...]   # unpacked cuda_results (+ cuda_traces)

For each run of an example, a GPU fixture (``tests/data/runtime/gpu/``) or the ``%%torchtriage`` magic
(``magic_cell.py``) found in a session's ``runs/`` and ``live_runs/`` (a later one wins) it writes, in
the case's folder:
``agent.json.gz`` (what the agent recorded on the GPU), ``trace.json.gz`` when
the trace is small (``FULL_TRACE_LIMIT``; the CI tests rebuild the report from
it) or else ``trace_trimmed.json.gz`` (two steps, for reading), the example
script as it ran (``script.py``: the line numbers in the records are its
lines), and ``report.json`` rebuilt from those records by this checkout's host
code.  A one-rank NCCL run (``runs/ddp_nccl``) is kept as ``ddp_nccl/``.  ``cases.json`` lists the
cases with the GPU, torch and driver they ran on; ``clocks.json`` holds the step times the workloads'
own synchronised clock read (``step_clock.py``).  Cases and examples no session names keep their entries.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from session import trim_trace  # noqa: E402
from torchtriage.runtime.attribution.lines import build_profile  # noqa: E402
from torchtriage.runtime.profiling.finish import write_outputs  # noqa: E402

TARGET = ROOT / "tests" / "data" / "runtime" / "cuda"
FIXTURES = ROOT / "tests" / "data" / "runtime" / "gpu"  # the runtime-findings fixtures' CUDA versions
FULL_TRACE_LIMIT = 1024 * 1024  # the examples' traces; --full-trace-limit for others
MAGIC = "magic_cell"  # the %%torchtriage run of magic_cell.py: its report.json is kept as the magic wrote it


def script_of(run: Path, raw: dict) -> Path | None:
    """The script a run profiled, as this checkout has it: an example, a GPU fixture, or the magic's cell file."""
    name = Path(raw["meta"]["script"]).name
    for candidate in (ROOT / "examples" / name, FIXTURES / name, run / name):
        if candidate.exists():
            return candidate
    return None


def save_case(run: Path, facts: dict, manifest: dict, case: str | None = None, full_trace_limit: int = FULL_TRACE_LIMIT) -> None:
    case = case or run.name
    target = TARGET / case
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    raw = json.loads((run / "agent.json").read_text(encoding="utf-8"))
    with gzip.open(target / "agent.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(raw, handle, separators=(",", ":"))
    trace = run / "trace.json.gz"
    extra: dict = {}
    if trace.exists() and trace.stat().st_size <= full_trace_limit:
        shutil.copy(trace, target / "trace.json.gz")
        extra["trace"] = str(target / "trace.json.gz")
    elif trace.exists():
        trim_trace(trace, target / "trace_trimmed.json.gz", steps=1, drop=("python_function", "cpu_instant_event"))
    script = script_of(run, raw)
    assert script is not None, run
    shutil.copy(script, target / "script.py")
    if run.name == MAGIC:  # as the magic wrote it (with the cells' static findings), compressed: its sources are 0.5 MB
        report = json.loads((run / "report.json").read_text(encoding="utf-8"))
        with gzip.open(target / "report.json.gz", "wt", encoding="utf-8") as handle:
            json.dump(report, handle)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            report = write_outputs(build_profile(raw, extra=extra), Path(scratch))
        (target / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    manifest[case] = {
        "script": script.name,
        "source": "the run folder (a notebook cell)" if script.parent == run else str(script.parent.relative_to(ROOT)),
        "argv": raw["meta"].get("argv"),
        "device": raw["meta"].get("device"),
        "device_name": raw["meta"].get("device_name"),
        "torch_version": raw["meta"].get("torch_version"),
        "driver": facts.get("nvidia_smi", ""),
        "full_trace": "trace" in extra,
        "verdict": report["bottleneck"]["kind"] if report else None,
    }
    print(f"{case}: {manifest[case]['verdict']}, {sum(p.stat().st_size for p in target.iterdir()) // 1024} KiB")


def save_nccl(run: Path, facts: dict, manifest: dict) -> None:
    """The one-rank NCCL run (``profile --nproc-per-node 1`` of tests/data/runtime/ddp_train.py): its rank's
    agent records and the job's report.json as recorded (the ranks section is the launcher's)."""
    target = TARGET / "ddp_nccl"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    raw = json.loads((run / "rank0" / "agent.json").read_text(encoding="utf-8"))
    with gzip.open(target / "agent.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(raw, handle, separators=(",", ":"))
    shutil.copy(run / "report.json", target / "report.json")
    shutil.copy(ROOT / "tests" / "data" / "runtime" / "ddp_train.py", target / "script.py")
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    manifest["ddp_nccl"] = {
        "script": "ddp_train.py", "argv": raw["meta"].get("argv"), "device": report.get("device"),
        "device_name": report.get("device_name"), "torch_version": report.get("torch_version"),
        "driver": facts.get("nvidia_smi", ""), "full_trace": False, "verdict": report["bottleneck"]["kind"],
        "backend": report.get("ranks", {}).get("backend"), "world_size": report.get("ranks", {}).get("world_size"),
    }
    print(f"ddp_nccl: {manifest['ddp_nccl']['verdict']}")


def save_clocks(sessions: list[Path]) -> dict:
    """Per example and variant, the synchronised clock's step times (ms): median and mean past the first 5
    steps, or over the profiled steps for a profiled run; a later session's runs replace an earlier's, and
    the examples no session timed keep what clocks.json had."""
    existing = TARGET / "clocks.json"
    clocks: dict = json.loads(existing.read_text(encoding="utf-8")) if existing.exists() else {}
    for session in sessions:
        timed = {path.stem.rsplit("-", 1)[0] for path in (session / "clock").glob("*.json")}
        for example in timed:  # a later session's example may have changed: none of the earlier runs stay
            clocks.pop(example, None)
        for path in sorted((session / "clock").glob("*.json")):
            example, variant = path.stem.rsplit("-", 1)
            data = json.loads(path.read_text(encoding="utf-8"))
            steps = [ms for ms, on in zip(data["steps_ms"], data["profiled"]) if on] if variant == "profiled" else data["steps_ms"][5:]
            if steps:
                clocks.setdefault(example, {})[variant] = {
                    "median_ms": round(statistics.median(steps), 3), "mean_ms": round(statistics.fmean(steps), 3), "steps": len(steps)}
    (TARGET / "clocks.json").write_text(json.dumps(clocks, indent=1) + "\n", encoding="utf-8")
    return clocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="+", type=Path)
    parser.add_argument("--skip", default="", help="comma-separated cases to leave out")
    parser.add_argument("--only", default="", help="comma-separated runs to keep (default: all)")
    parser.add_argument("--rename", default="", help="comma-separated RUN=CASE: keep a run under another case name "
                                                     "(sync_every_step=sync_every_step_h200 keeps an earlier GPU's case)")
    parser.add_argument("--no-clocks", action="store_true", help="leave clocks.json as it is")
    parser.add_argument("--full-trace-limit", type=int, default=FULL_TRACE_LIMIT,
                        help="keep a trace whole up to this many bytes, else one trimmed step")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    renamed = dict(pair.split("=", 1) for pair in filter(None, args.rename.split(",")))
    runs: dict[str, tuple[Path, dict]] = {}
    nccl: tuple[Path, dict] | None = None
    for session in args.sessions:
        facts = json.loads((session / "facts.json").read_text(encoding="utf-8"))
        # the session's profiles, then the live tests' runs (``pytest`` part): a later folder wins
        for folder in (session / "runs", session / "live_runs"):
            for run in sorted(folder.iterdir()) if folder.is_dir() else []:
                if run.name in args.skip.split(",") or (only and run.name not in only):
                    continue
                agent = run / "agent.json"
                if agent.exists() and script_of(run, json.loads(agent.read_text(encoding="utf-8"))) is not None:
                    runs[run.name] = (run, facts)
                elif run.name == "ddp_nccl" and (run / "rank0" / "agent.json").exists():
                    nccl = (run, facts)
    cases_file = TARGET / "cases.json"
    manifest: dict = json.loads(cases_file.read_text(encoding="utf-8")) if cases_file.exists() else {}
    for name in sorted(runs):
        save_case(runs[name][0], runs[name][1], manifest, renamed.get(name), args.full_trace_limit)
    if nccl is not None:
        save_nccl(nccl[0], nccl[1], manifest)
    cases_file.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n", encoding="utf-8")
    if not args.no_clocks:
        save_clocks(args.sessions)


if __name__ == "__main__":
    main()
