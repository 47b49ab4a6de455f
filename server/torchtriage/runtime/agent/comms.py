"""Collectives in the event tree: where they ran, and which stalls of the stepping thread wait on them.

What torch 2.13's profiler records (measured with DDP on CPU, gloo): the stepping
thread runs a short ``c10d::allreduce_`` op (the enqueue) and then blocks inside
``run_backward`` (DDP waits for its buckets at the end of backward) with no
child event; the collective itself is a ``gloo:all_reduce`` range (a
``record_function``, so a user-scope op) at the top of one of gloo's own
threads, from enqueue to completion, waiting for the slowest peer included.
NCCL writes ``nccl:*`` ranges and ``record_param_comms`` ops on the stepping
thread and runs the transfer as GPU kernels (``ncclKernel_*`` / ``ncclDevKernel_*``).

So a collective's interval comes from the ranges on other threads, and the
stepping thread's *own* time inside a C call (no child event) that falls in
such an interval is time spent waiting for communication.  Standard library
and torch only.
"""

from __future__ import annotations

import bisect
from typing import Any, List, Tuple

from .intervals import uncovered

COLLECTIVE_PREFIXES = ("gloo:", "nccl:", "mpi:", "ucc:", "c10d::", "record_param_comms", "ProcessGroup")


def is_collective(name: str) -> bool:
    """Whether an op or range name is a collective (or its enqueue)."""
    return name.startswith(COLLECTIVE_PREFIXES)


class CollectiveIntervals:
    """The collectives running on threads other than the stepping one, merged into disjoint intervals."""

    def __init__(self) -> None:
        self.found: List[Tuple[str, int, int]] = []  # (name, start_ns, end_ns), in start order
        self.lows: List[int] = []
        self.highs: List[int] = []

    def find(self, roots: List[Any], main_tid: int, first: int, last: int, torch_op: int) -> None:
        """Collect the collective ranges among the tree's roots (and their children) off the stepping thread."""
        for node in roots:
            if node.start_tid == main_tid or node.end_time_ns <= first or node.start_time_ns >= last:
                continue
            for candidate in [node] + list(node.children):
                if candidate.tag.value == torch_op and is_collective(candidate.name):
                    self.found.append((candidate.name, candidate.start_time_ns, candidate.end_time_ns))
                    break
        self.found.sort(key=lambda f: f[1])
        for _, low, high in self.found:
            if self.highs and low <= self.highs[-1]:
                self.highs[-1] = max(self.highs[-1], high)
            else:
                self.lows.append(low)
                self.highs.append(high)

    def meets(self, start: int, end: int) -> bool:
        """Whether [start, end) overlaps a collective."""
        i = bisect.bisect_right(self.highs, start)
        return i < len(self.lows) and self.lows[i] < end

    def inside(self, start: int, end: int, children: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
        """The parts of [start, end) outside ``children`` (sorted intervals) that lie inside a collective."""
        out = []
        for g_start, g_end in uncovered(start, end, children):
            i = bisect.bisect_right(self.highs, g_start)
            while i < len(self.lows) and self.lows[i] < g_end:
                a, b = max(g_start, self.lows[i]), min(g_end, self.highs[i])
                if b > a:
                    out.append((a, b))
                i += 1
        return out
