"""Collectives in a trace, and the stepping thread's time spent waiting for them.

What torch 2.13's profiler writes for DDP over gloo (measured on CPU, two ranks):
a short ``c10d::allreduce_`` op (the enqueue) on the stepping thread, then the
stepping thread inside ``<built-in method run_backward>`` with no event of its
own while a ``gloo:all_reduce`` range (``user_annotation``) runs on one of
gloo's threads from enqueue to completion, the wait for the slowest peer
included.  NCCL writes ``nccl:*`` ranges and ``record_param_comms`` ops, and
runs the transfer as ``ncclKernel_*`` / ``ncclDevKernel_*`` GPU kernels
(``distributed/comms.py`` reads those from the ``gpu`` records).

As in the agent (``agent/comms.py``, whose intervals this reuses), a collective
range on a thread other than the stepping one marks when a collective was in
flight, and the own time of a stepping-thread C call inside such an interval is
waiting for communication.  NCCL kernels mark it too, for the stepping thread's
CUDA synchronize calls: the part of such a wait during which an NCCL kernel ran
is the rank waiting for its peers (an NCCL kernel spins until every rank has
joined), the rest a host sync.  The records arrive in start order, so every range
that can overlap a stretch of own time is known by the time that stretch is
charged (the sweep charges it when the next event on the thread starts).
"""

from __future__ import annotations

from ..agent.comms import CollectiveIntervals, is_collective
from ..agent.wire import Collective
from ..distributed.comms import NCCL_KERNEL_PREFIXES
from .steps import StepClock

WAIT_CONTEXTS = ("", "optimizer", "communication", "python_overhead")  # never inside data loading or the profiler's own time
# The calling thread's enqueue of a collective, not its flight: under NCCL, DDP's hooks issue ``c10d::allreduce_`` /
# ``record_param_comms`` / ``nccl:all_reduce`` from the autograd thread, and the transfer is the NCCL kernel.
ENQUEUE_PREFIXES = ("nccl:", "c10d::", "record_param_comms")

__all__ = ["ENQUEUE_PREFIXES", "NCCL_KERNEL_PREFIXES", "TraceCollectives", "WAIT_CONTEXTS", "is_collective"]


class TraceCollectives(CollectiveIntervals):
    """The collective ranges off the stepping thread (and NCCL kernels), merged into disjoint intervals as they
    arrive in start order; ``found`` keeps the ranges (agent.json ``collectives``: not the kernels, which are GPU records)."""

    def add(self, name: str, start: int, end: int, record: bool = True) -> None:
        if record:
            self.found.append((name, start, end))
        if self.highs and start <= self.highs[-1]:
            self.highs[-1] = max(self.highs[-1], end)
        else:
            self.lows.append(start)
            self.highs.append(end)

    def waited(self, clock: StepClock, start: int, end: int) -> list[tuple[int, int]]:
        """(step position, ns) of [start, end) that lies inside a collective (empty when none overlaps)."""
        if not self.lows or not self.meets(start, end):
            return []
        out = []
        for a, b in self.inside(start, end, []):
            out.extend(clock.split(a, b))
        return out

    def records(self, clock: StepClock) -> list[Collective]:
        """agent.json's ``collectives``: each range with the step it starts in."""
        return [Collective(clock.step_of(start), name, start, end) for name, start, end in self.found]
