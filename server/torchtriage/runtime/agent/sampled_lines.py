"""Line charges from the frame samples of a window recorded without Python frames.

Such a window's ops and ranges give each category's time exactly, but no line
(``node_visit``).  The lines come from the samples: each stands for the time
since the one before it (the timer-signal sampler runs its handler when the
main thread next runs bytecode, so a sample closes the stretch it ends: a sleep
interrupted every interval, a long op once it returns) and names the line the
main thread was on.  What it was doing, for the line's category and top names:

* an op of the stepping thread that ended just before the sample (within
  ``OP_SLACK_NS``): the signal arrived while the op ran, and the handler ran
  once it returned, on the line that called it.  That op's category and name;
* otherwise the innermost ``record_function`` range around the sample (the
  DataLoader's, the optimizer's, the step's): its category, as Python.

So a line's time is an estimate from the samples (short ops are found in
proportion to the time they take, not placed on the nearest sample's line),
while the categories' totals stay the walk's.  The charges are written apart
from the walk's (agent.json ``sampled_charges``): the host takes lines from
them and category totals from the walk's.
"""

from __future__ import annotations

import bisect
from typing import Callable, Dict, List, Sequence, Tuple

from .wire import Charge, Step

OP_SLACK_NS = 50_000  # a sample this soon after an op ended was taken for it (the handler runs at the next bytecode)
GAP_CAP = 10  # a sample stands for at most this many sampling intervals (the sampler was off, or starved, before it)
PYTHON = "(Python between ops)"

OpSpan = Tuple[int, int, str, str]  # (start, end, category, name) of an outermost op of the stepping thread
RangeSpan = Tuple[int, int, str]  # (start, end, category of its own time) of a record_function range
Sample = Tuple[int, str, str, int]  # (time_ns, filename, function, line), as the samplers record them


def sampled_charges(samples: Sequence[Sample], steps: Sequence[Step], ops: List[OpSpan], ranges: List[RangeSpan],
                    interval_ns: int, line_chain: Callable[[str, int, str], int]) -> List[Charge]:
    """One charge per (step, line, category, name) from the samples inside the recorded steps.
    ``line_chain(filename, line, function)``: the chain id of that line's site."""
    if not samples or not steps:
        return []
    ops = sorted(ops, key=lambda o: o[1])
    op_ends = [o[1] for o in ops]
    ranges = sorted(ranges, key=lambda r: (r[0], -r[1]))
    starts = [s.start_ns for s in steps]
    cap = GAP_CAP * interval_ns
    totals: Dict[Tuple[int, int, str, str], List[int]] = {}
    open_ranges: List[RangeSpan] = []
    k = 0
    previous = None
    for time_ns, filename, function, line in sorted(samples):
        span = interval_ns if previous is None else min(time_ns - previous, cap)
        previous = time_ns
        while k < len(ranges) and ranges[k][0] <= time_ns:
            open_ranges.append(ranges[k])
            k += 1
        while open_ranges and open_ranges[-1][1] <= time_ns:
            open_ranges.pop()
        i = bisect.bisect_right(starts, time_ns) - 1
        if i < 0 or time_ns >= steps[i].end_ns or span <= 0:
            continue
        j = bisect.bisect_right(op_ends, time_ns) - 1
        if j >= 0 and time_ns - op_ends[j] <= OP_SLACK_NS and ops[j][0] >= steps[i].start_ns:
            category, name = ops[j][2], ops[j][3]
        else:
            category, name = (open_ranges[-1][2] if open_ranges else "python_overhead"), PYTHON
        key = (i, line_chain(filename, line, function), category, name)
        entry = totals.get(key)
        if entry is None:
            totals[key] = [span, 1]
        else:
            entry[0] += span
            entry[1] += 1
    return [Charge(step, chain, category, name, -1, True, ns, count) for (step, chain, category, name), (ns, count) in totals.items()]
