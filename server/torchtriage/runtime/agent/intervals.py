"""Interval arithmetic on the agent's event times (ns): what an event's children leave uncovered, and
where the GPU sat idle inside the steps.  Standard library only, so that ``runtime/offline`` (which has
no torch) finds gaps in a recorded trace by the agent's own rule."""

from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

from .wire import GpuActivity, Step

PROBES = 5  # instants looked up per GPU idle gap
MIN_GAP_NS = 20_000  # shorter idle spans are launch latency, not a gap worth naming
MAX_GAPS = 10


def uncovered(start: int, end: int, children: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The parts of [start, end) outside ``children`` (intervals sorted by start): an event's self time."""
    gaps = []
    cursor = start
    for c_start, c_end in children:
        if c_start > cursor:
            gaps.append((cursor, min(c_start, end)))
        cursor = max(cursor, c_end)
    if cursor < end:
        gaps.append((cursor, end))
    return gaps


def idle_spans(gpu: Sequence[GpuActivity], steps: Sequence[Step]) -> List[Tuple[int, int, int, str]]:
    """(step position, start ns, end ns, next activity) of every idle span between GPU activities inside a step."""
    return idle_between(sorted((g.start_ns, g.start_ns + g.ns, g.name) for g in gpu if g.ns >= 0), steps)


def idle_between(busy: Iterable[Tuple[int, int, str]], steps: Sequence[Step]) -> List[Tuple[int, int, int, str]]:
    """``idle_spans`` over busy intervals already in start order: (start ns, end ns, the activity that starts it)."""
    out = []
    end = None
    for start, stop, name in busy:
        if end is not None and start > end:
            for position, step in enumerate(steps):
                low, high = max(end, step.start_ns), min(start, step.end_ns)
                if high > low:
                    out.append((position, low, high, name))
        end = stop if end is None else max(end, stop)
    return out
