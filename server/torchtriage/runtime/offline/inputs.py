"""What ``torchtriage analyze PATH`` reads: a trace file, or the one trace of a folder it picks.

``tensorboard_trace_handler(dir)`` writes ``<worker>.<ms since epoch>.pt.trace.json``
(``.gz`` when asked), one file per worker (process; by default ``host_pid``) and
profiling cycle.  In a folder the newest file of each worker is that worker's
trace; with several workers the one of rank 0 is analysed (a rank from
``distributedInfo.rank`` in the file's header, or ``rank<N>`` in its name; else the
first by name) and the others are listed: analysing ranks together is not done
yet.  Without tensorboard names, any ``*.json`` / ``*.json.gz`` in the folder
(not torchtriage's own outputs) counts, each file a worker of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .reader import TraceError, read_header

_HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ms>\d{10,})\.pt\.trace\.json(?:\.gz)?$")
_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
OWN_OUTPUTS = ("report.json", "profile.json", "agent.json", "compare.json", "verify.json", "lab.json", "progress.json")


@dataclass
class Choice:
    """The trace to analyse, its rank when known, and the rest of the folder."""

    path: Path
    rank: Optional[int] = None
    others: list[dict[str, Any]] = field(default_factory=list)  # other workers: {"path", "rank"}
    left_out: int = 0  # older files of the same workers
    warnings: list[str] = field(default_factory=list)


def header_rank(header: dict[str, Any]) -> Optional[int]:
    info = header.get("distributedInfo")
    if isinstance(info, dict):
        try:
            return int(info.get("rank"))
        except (TypeError, ValueError):
            return None
    return None


def _name_rank(name: str) -> Optional[int]:
    match = _RANK.search(name)
    return int(match.group(1)) if match else None


def choose_trace(path: Path) -> Choice:
    """The file to analyse for PATH (a file, or a folder of traces); ``TraceError`` when there is none."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    if not path.is_dir():
        return Choice(path=path, rank=_name_rank(path.name))
    files = sorted(p for p in path.rglob("*.pt.trace.json*") if p.is_file() and p.name.endswith((".json", ".json.gz")))
    if not files:
        files = sorted(p for p in path.rglob("*.json*")
                       if p.is_file() and p.name.endswith((".json", ".json.gz")) and p.name not in OWN_OUTPUTS)
    if not files:
        raise TraceError(f"{path}: no trace files in this folder (*.pt.trace.json, *.json or *.json.gz)")
    newest: dict[tuple[Path, str], tuple[float, Path]] = {}
    for file in files:
        match = _HANDLER_NAME.match(file.name)
        worker = match.group("worker") if match else file.name
        when = float(match.group("ms")) if match else file.stat().st_mtime * 1000
        key = (file.parent, worker)
        if key not in newest or when > newest[key][0]:
            newest[key] = (when, file)
    chosen = [(worker, file) for (_, worker), (_, file) in sorted(newest.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
    ranked = []
    for worker, file in chosen:
        rank = _name_rank(worker)
        if rank is None and len(chosen) > 1:
            try:
                rank = header_rank(read_header(file))
            except TraceError:
                rank = None
        ranked.append((rank, file))
    zero = [r for r in ranked if r[0] == 0]
    rank, picked = zero[0] if zero else ranked[0]
    choice = Choice(path=picked, rank=rank, left_out=len(files) - len(chosen))
    choice.others = [{"path": str(f), "rank": r} for r, f in ranked if f != picked]
    if choice.others:
        choice.warnings.append(
            f"{len(ranked)} workers' traces in {path}: this report is {picked.name}"
            + (f" (rank {rank})" if rank is not None else "")
            + f"; the other {len(choice.others)} are not analysed (analysing ranks together is not supported yet: "
            "run torchtriage analyze on each file)"
        )
    if choice.left_out:
        choice.warnings.append(
            f"{choice.left_out} older trace file(s) of the same worker(s) in {path} were left out: "
            "the newest run of each worker is analysed"
        )
    return choice
