"""The recorded steps of a trace, and which step a time falls in.

Steps are the CPU's ``ProfilerStep#N`` ranges on the stepping thread (their
mirror on the GPU's timeline is not a step).  A trace with none (recorded
without a schedule, or without ``prof.step()``) is analysed as one step: the
stepping thread's span of Python and operator events, and the report says so.
"""

from __future__ import annotations

import bisect
from typing import Optional

from ..agent.wire import Step
from .events import StepRange, TraceScan

WHOLE_TRACE = ("the trace has no ProfilerStep# ranges (no schedule, or no prof.step() in the loop): "
               "the whole recorded span is analysed as one step")


def find_steps(scan: TraceScan) -> tuple[list[Step], Optional[int], list[str]]:
    """The steps in time order (overlapping ones dropped), the stepping thread, and warnings."""
    main = scan.main_thread()
    warnings: list[str] = []
    ranges: list[StepRange] = sorted((s for s in scan.steps if s.thread == main), key=lambda s: s.start_ns)
    steps: list[Step] = []
    for r in ranges:
        if r.end_ns <= r.start_ns:
            continue
        if steps and r.start_ns < steps[-1].end_ns:
            continue  # a second ProfilerStep over the same time (mixed runs): keep the first
        steps.append(Step(r.number, r.start_ns, r.end_ns))
    if len(steps) < len(ranges):
        warnings.append(f"{len(ranges) - len(steps)} ProfilerStep range(s) overlapped others or were empty and were left out")
    if not steps and main is not None:
        span = scan.thread_span.get(main)
        if span and span[1] > span[0]:
            steps = [Step(0, span[0], span[1])]
            warnings.append(WHOLE_TRACE)
    return steps, main, warnings


class StepClock:
    """Which step position a time falls in, and how an interval divides among steps."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.starts = [s.start_ns for s in steps]
        self.ends = [s.end_ns for s in steps]
        self.first = self.starts[0] if steps else 0
        self.last = self.ends[-1] if steps else 0
        # The step last found, [lo, hi) at position pos: a sweep asks about the same step many times
        # running, so callers on a hot path test ``lo <= t < hi`` themselves before calling.
        self.lo, self.hi, self.pos = 1, 0, -1

    def step_of(self, t: int) -> int:
        if self.lo <= t < self.hi:
            return self.pos
        i = bisect.bisect_right(self.starts, t) - 1
        if i < 0 or t >= self.ends[i]:
            return -1
        self.lo, self.hi, self.pos = self.starts[i], self.ends[i], i
        return i

    def within(self, start: int, end: int) -> int:
        """The position of the one step that holds all of [start, end) (non-empty), else -1 (``split`` it)."""
        if self.lo <= start and end <= self.hi and start < end:
            return self.pos
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0 and start < end <= self.ends[i]:
            self.lo, self.hi, self.pos = self.starts[i], self.ends[i], i
            return i
        return -1

    def split(self, start: int, end: int) -> list[tuple[int, int]]:
        """[start, end) as (step position, ns) pieces inside steps."""
        if end <= start or end <= self.first or start >= self.last:
            return []
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0 and end <= self.ends[i]:
            return [(i, end - start)]
        pieces = []
        i = max(0, i)
        while i < len(self.starts) and self.starts[i] < end:
            low, high = max(start, self.starts[i]), min(end, self.ends[i])
            if high > low:
                pieces.append((i, high - low))
            i += 1
        return pieces
