"""The traces in a folder: one per worker (process), each worker's rank, and which of them form one job.

``tensorboard_trace_handler(dir)`` writes ``<worker>.<time>.pt.trace.json[.gz]``,
one file per worker and profiling cycle; the worker is ``<host>_<pid>`` unless
the script names it (``worker_name=f"rank{rank}"`` is common).  A multi-process
job writes ``distributedInfo: {backend, rank, world_size}`` into each trace's
header (read without reading the events: kineto writes it before them).

* Of a worker's files (one per profiling cycle), the one with the most
  ``ProfilerStep`` ranges is that worker's trace, the newest of a tie
  (``cycles``): a last cycle cut short by the job's end is not chosen over a
  full one.  The others (other cycles, or an earlier run of the same worker)
  are left out and listed.
* A worker's rank is ``distributedInfo.rank``, else ``rank<N>`` in its name.
* Two workers with the same rank (a job run twice into one logdir: new pids,
  new worker names) keep the newer, and the other is listed.
* With two ranks or more the folder is one job, analysed rank by rank; workers
  without a rank beside them are listed and not analysed.  With fewer, several
  workers are separate runs, each analysed by itself.

Without tensorboard names, any ``*.json`` / ``*.json.gz`` in the folder (not
torchtriage's own outputs) counts, each file a worker of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .cycles import fullest
from .reader import TraceError, read_header

HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ms>\d{10,})\.pt\.trace\.json(?:\.gz)?$")
NAME_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
HOST_PID = re.compile(r"_(\d+)$")
RUN_FILES = ("report.json", "profile.json", "agent.json", "output.log")  # a torchtriage run folder holds one of these
OWN_OUTPUTS = ("report.json", "profile.json", "agent.json", "compare.json", "verify.json", "lab.json", "progress.json")
LISTED = 4  # paths named in a warning before "and N more"


@dataclass(frozen=True)
class Worker:
    """One worker's trace (its fullest cycle), and what its header and name say about it."""

    path: Path
    name: str  # the worker as tensorboard_trace_handler names it, else the file name
    when: float  # the time in its newest file's name (tensorboard), else that file's mtime in ms
    rank: Optional[int] = None
    world_size: Optional[int] = None
    backend: Optional[str] = None
    host: Optional[str] = None

    @property
    def pid(self) -> Optional[int]:
        match = HOST_PID.search(self.name)
        return int(match.group(1)) if match else None


@dataclass
class Workers:
    """The traces of a folder: the newest per worker, and what was left out and why."""

    folder: Path
    workers: list[Worker]
    older: list[Path] = field(default_factory=list)  # older files of the same workers
    replaced: list[Worker] = field(default_factory=list)  # workers whose rank a newer worker has (an earlier run)
    unranked: list[Worker] = field(default_factory=list)  # workers without a rank beside ranked ones (not analysed)
    fuller: list[tuple[Path, int, Path, int]] = field(default_factory=list)  # (chosen, its steps, newest, its steps)

    @property
    def ranks(self) -> list[Worker]:
        """The job's ranks in rank order when the folder holds at least two, else []."""
        ranked = sorted((w for w in self.workers if w.rank is not None), key=lambda w: w.rank or 0)
        return ranked if len(ranked) >= 2 else []

    @property
    def world_size(self) -> Optional[int]:
        sizes = [w.world_size for w in self.workers if w.world_size]
        return max(sizes) if sizes else None

    def warnings(self) -> list[str]:
        """What was left out, and what the traces lacked, each as one sentence."""
        out = []
        for chosen, steps, newest, newest_steps in self.fuller:
            out.append(f"the newest trace of its worker, {newest.name}, holds {newest_steps} step(s) (a cycle cut short?): the "
                       f"fuller cycle {chosen.name} ({steps} steps) is analysed; give the file itself to analyse another")
        if self.older:
            out.append(f"{len(self.older)} other trace file(s) of the same worker(s) in {self.folder} were left out (other "
                       f"profiling cycles or runs): the cycle with the most steps of each worker is analysed; left out: "
                       f"{_names(self.older)}")
        if self.replaced:
            out.append(f"{len(self.replaced)} trace(s) of an earlier run claim the same rank(s) as newer ones and were left out: "
                       + _names([w.path for w in self.replaced]))
        ranks = self.ranks
        if ranks and self.unranked:
            out.append(f"{len(self.unranked)} trace(s) in {self.folder} have no rank (no distributedInfo, no rank<N> in the file "
                       f"name) and were not analysed with the ranks: {_names([w.path for w in self.unranked])}")
        world = self.world_size
        if ranks and world and len(ranks) < world:
            missing = sorted(set(range(world)) - {w.rank for w in ranks})
            shown = ", ".join(str(r) for r in missing[:16]) + (" ..." if len(missing) > 16 else "")
            out.append(f"the traces of {len(missing)} of {world} ranks are not in {self.folder} (ranks {shown}): "
                       "stragglers are named among the ranks found")
        if not ranks and len(self.workers) > 1:
            out.append(f"{len(self.workers)} traces in {self.folder} have no rank metadata (no distributedInfo in the trace, no "
                       "rank<N> in the file name): each is analysed as a separate run, with no comparison across ranks")
        return out


def _names(paths: list[Path]) -> str:
    names = ", ".join(p.name for p in paths[:LISTED])
    return names + (f" and {len(paths) - LISTED} more" if len(paths) > LISTED else "")


def header_identity(header: dict[str, Any]) -> tuple[Optional[int], Optional[int], Optional[str]]:
    """(rank, world size, backend) from a trace header's ``distributedInfo`` (None where absent)."""
    info = header.get("distributedInfo")
    if not isinstance(info, dict):
        return None, None, None
    return _int(info.get("rank")), _int(info.get("world_size")), (str(info["backend"]) if info.get("backend") else None)


def name_rank(name: str) -> Optional[int]:
    match = NAME_RANK.search(name)
    return int(match.group(1)) if match else None


def _int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def trace_files(folder: Path) -> list[Path]:
    """The trace files under ``folder``: ``*.pt.trace.json[.gz]``, else any ``*.json[.gz]`` that is not torchtriage's."""
    files = sorted(p for p in folder.rglob("*.pt.trace.json*") if p.is_file() and p.name.endswith((".json", ".json.gz")))
    if not files:
        files = sorted(p for p in folder.rglob("*.json*")
                       if p.is_file() and p.name.endswith((".json", ".json.gz")) and p.name not in OWN_OUTPUTS)
    return files


def is_trace_input(path: Path) -> bool:
    """Whether ``path`` is a trace file or a folder of traces, rather than a torchtriage run folder (or its report.json)."""
    path = Path(path)
    if path.is_file():
        return path.name not in OWN_OUTPUTS and path.name.endswith((".json", ".json.gz"))
    if path.is_dir():
        return not any((path / name).exists() for name in RUN_FILES) and bool(trace_files(path))
    return False


def list_workers(folder: Path) -> Workers:
    """The traces in ``folder`` (see the module doc); ``TraceError`` when there is none."""
    files = trace_files(folder)
    if not files:
        raise TraceError(f"{folder}: no trace files in this folder (*.pt.trace.json, *.json or *.json.gz)")
    newest: dict[tuple[Path, str], list[tuple[float, Path]]] = {}
    for file in files:
        match = HANDLER_NAME.match(file.name)
        worker = match.group("worker") if match else file.name
        when = float(match.group("ms")) if match else file.stat().st_mtime * 1000
        newest.setdefault((file.parent, worker), []).append((when, file))
    found = Workers(folder=folder, workers=[])
    for (_, worker), runs in sorted(newest.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        runs.sort()
        when, file = runs[-1]
        if len(runs) > 1:
            (_, file), steps = fullest(runs)
            if file != runs[-1][1]:
                found.fuller.append((file, steps[file], runs[-1][1], steps[runs[-1][1]]))
        found.older += [f for _, f in runs if f != file]
        try:
            header = read_header(file) if len(newest) > 1 else {}
        except TraceError:
            header = {}
        rank, world, backend = header_identity(header)
        host = header.get("host_name")
        found.workers.append(Worker(file, worker, when, rank if rank is not None else name_rank(worker), world, backend,
                                    str(host) if host else None))
    found.older.sort()
    _one_per_rank(found)
    return found


def _one_per_rank(found: Workers) -> None:
    """Keep the newest worker of each rank; with two ranks or more, set the unranked workers aside."""
    by_rank: dict[int, Worker] = {}
    for worker in found.workers:
        if worker.rank is None:
            continue
        other = by_rank.get(worker.rank)
        if other is None or worker.when > other.when:
            if other is not None:
                found.replaced.append(other)
            by_rank[worker.rank] = worker
        else:
            found.replaced.append(worker)
    found.workers = [w for w in found.workers if w not in found.replaced]
    if len(by_rank) >= 2:
        found.unranked = [w for w in found.workers if w.rank is None]
        found.workers = [w for w in found.workers if w.rank is not None]
