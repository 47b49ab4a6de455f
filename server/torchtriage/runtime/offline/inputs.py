"""What ``torchtriage analyze PATH`` reads: a trace file, or the one trace of a folder it picks.

``tensorboard_trace_handler(dir)`` writes ``<worker>.<ms since epoch>.pt.trace.json``
(``.gz`` when asked), one file per worker (process; by default ``host_pid``) and
profiling cycle.  In a folder the file of each worker with the most steps (its
fullest cycle, the newest of a tie) is that worker's trace (``workers``).  ``choose_trace`` picks one trace: the file given, or in a
folder the trace of rank 0 (else the first worker by name), listing the others;
``analyze`` analyses a folder of several ranks or runs worker by worker
(``ranks``) and each worker's trace through ``choose_trace``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .reader import TraceError
from .workers import OWN_OUTPUTS, header_identity, list_workers, name_rank

__all__ = ["OWN_OUTPUTS", "Choice", "TraceError", "choose_trace", "header_rank"]


@dataclass
class Choice:
    """The trace to analyse, its rank when known, and the rest of the folder."""

    path: Path
    rank: Optional[int] = None
    others: list[dict[str, Any]] = field(default_factory=list)  # other workers: {"path", "rank"}
    left_out: int = 0  # older files of the same workers
    warnings: list[str] = field(default_factory=list)


def header_rank(header: dict[str, Any]) -> Optional[int]:
    return header_identity(header)[0]


def choose_trace(path: Path) -> Choice:
    """The file to analyse for PATH (a file, or a folder of traces); ``TraceError`` when there is none."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    if not path.is_dir():
        return Choice(path=path, rank=name_rank(path.name))
    found = list_workers(path)
    workers = found.ranks or found.workers
    picked = next((w for w in workers if w.rank == 0), workers[0])
    choice = Choice(path=picked.path, rank=picked.rank, left_out=len(found.older))
    choice.others = [{"path": str(w.path), "rank": w.rank} for w in workers if w is not picked]
    choice.warnings = found.warnings()
    return choice
