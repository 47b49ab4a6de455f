"""Communication per rank: how long the stepping thread waited, how long collectives ran, the overlap.

* ``wait``: the rank's ``communication`` time (its stepping thread inside a
  collective op, or blocked in a C call while a collective ran elsewhere; see
  ``agent/comms.py``).
* ``in flight``: per step, the union of the collectives' intervals: gloo's
  ranges on its own threads (agent.json ``collectives``) or, on a GPU, NCCL
  kernels (``gpu`` records whose name starts with ``nccl``; not yet run on a GPU).
* ``overlap``: the part of the in-flight time the stepping thread did not
  wait, i.e. spent on compute or anything else: 1 - wait / in flight.
* Across ranks, the least in-flight time of any rank estimates the transfer
  itself (the last rank to arrive barely waits); the rest of a rank's
  in-flight time is waiting for slower ranks.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Optional

from ..agent.wire import Collective, GpuActivity, Step, read_records
from ..results.profile_data import ProfileData

NCCL_KERNEL_PREFIXES = ("nccl", "ncclKernel", "ncclDevKernel")
ALLREDUCE_NAMES = ("allreduce", "all_reduce")


@dataclass(frozen=True)
class RankComms:
    rank: int
    wait_ms: float  # per step
    in_flight_ms: float  # per step
    overlap: Optional[float]  # None: no collective seen
    share: float  # wait / mean step
    collectives_per_step: float
    allreduces_per_step: float  # c10d all-reduce calls on the stepping thread per step
    source: str  # "gloo threads" | "nccl kernels" | "" (none seen)


def rank_comms(rank: int, profile: ProfileData, raw: dict[str, Any]) -> RankComms:
    """The communication figures of one rank from its ProfileData and agent.json."""
    n = max(1, profile.steps_profiled)
    mean_step_ms = profile.mean_step_us / 1000.0
    wait_ms = profile.category_us.get("communication", 0.0) / 1000.0 / n
    steps = [(s.start_ns, s.end_ns) for s in read_records(raw.get("steps", []), Step)][: profile.steps_profiled]
    intervals = [(c.start_ns, c.end_ns) for c in read_records(raw.get("collectives", []), Collective)]
    source = "gloo threads" if intervals else ""
    if not intervals:
        intervals = [(g.start_ns, g.start_ns + g.ns) for g in read_records(raw.get("gpu", []), GpuActivity)
                     if g.name.startswith(NCCL_KERNEL_PREFIXES)]
        source = "nccl kernels" if intervals else ""
    in_flight_ms = sum(_covered(intervals, start, end) for start, end in steps) / 1e6 / n if steps else 0.0
    overlap = None
    if in_flight_ms > 0:
        overlap = max(0.0, min(1.0, 1.0 - wait_ms / in_flight_ms))
    collectives = len([1 for a, _ in intervals if any(s <= a < e for s, e in steps)])
    allreduces = sum(o.calls for o in profile.ops if o.name.startswith("c10d::") and any(k in o.name for k in ALLREDUCE_NAMES))
    return RankComms(
        rank=rank, wait_ms=round(wait_ms, 4), in_flight_ms=round(in_flight_ms, 4),
        overlap=None if overlap is None else round(overlap, 4),
        share=round(wait_ms / mean_step_ms, 5) if mean_step_ms > 0 else 0.0,
        collectives_per_step=round(collectives / n, 3), allreduces_per_step=round(allreduces / n, 3), source=source,
    )


def _covered(intervals: list[tuple[int, int]], start: int, end: int) -> int:
    """Nanoseconds of [start, end) covered by the union of ``intervals``."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if b > start and a < end)
    total, cursor = 0, start
    for a, b in clipped:
        a = max(a, cursor)
        if b > a:
            total += b - a
            cursor = b
    return total


def communication_summary(ranks: list[RankComms], stragglers: list[int]) -> dict[str, Any]:
    """report.json ``ranks.communication``: the mean share, the transfer estimate and a sentence."""
    if not ranks:
        return {"share": 0.0, "transfer_ms": None, "overlap": None, "text": "no rank recorded any step"}
    share = statistics.mean(r.share for r in ranks)
    flights = [r.in_flight_ms for r in ranks if r.in_flight_ms > 0]
    transfer = min(flights) if flights else None
    overlaps = [r.overlap for r in ranks if r.overlap is not None]
    overlap = statistics.mean(overlaps) if overlaps else None
    if transfer is None:
        text = "No collective was recorded in the profiled steps."
    else:
        per_rank = ", ".join(f"rank {r.rank} {r.share * 100:.0f}%" for r in ranks)
        text = (
            f"Ranks spend {share * 100:.0f}% of a step waiting in collectives on average ({per_rank}); a collective is in "
            f"flight for at least {transfer:.2f} ms per step on every rank (about the transfer itself)"
        )
        waiting = max(ranks, key=lambda r: r.in_flight_ms)
        if waiting.in_flight_ms - transfer > max(1.0, transfer):
            text += f"; rank {waiting.rank}'s collectives last {waiting.in_flight_ms - transfer:.1f} ms longer: it waits for "
            text += ("rank " + ", ".join(str(s) for s in stragglers)) if stragglers else "slower ranks"
        text += "."
        if overlap is not None:
            text += f" {overlap * 100:.0f}% of the in-flight time overlaps other work on average."
    return {
        "share": round(share, 5),
        "transfer_ms": None if transfer is None else round(transfer, 4),
        "overlap": None if overlap is None else round(overlap, 4),
        "text": text,
    }
