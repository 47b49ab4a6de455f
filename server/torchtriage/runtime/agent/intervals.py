"""Interval arithmetic on the agent's event times (ns): what an event's children leave uncovered."""

from __future__ import annotations

from typing import List, Tuple


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
