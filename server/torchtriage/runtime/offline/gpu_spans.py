"""The GPU's busy spans, gathered in the first pass over a trace in any order, for its idle gaps.

Kineto writes GPU activity after the CPU events, so the spans are known before
the time-ordered sweep begins: ``gaps`` picks its probe instants from them and
the sweep looks at the stepping thread at those instants as it passes them, with
no second read of the trace.  Spans closer than ``MIN_GAP_NS`` are merged
whenever the list grows long (a shorter gap is never named), so memory follows
the number of gaps worth naming, not the number of kernels.
"""

from __future__ import annotations

from typing import Sequence

from ..agent.intervals import MIN_GAP_NS, idle_between
from ..agent.wire import Step

COMPACT_AT = 65_536  # spans held before merging the close ones
_Span = tuple[int, int, str, int]  # start ns, the first activity's end ns, its name, end ns of the merged busy span


class GpuSpans:
    """``add`` each kernel, copy or memset; ``idle`` gives the idle spans inside the steps."""

    def __init__(self) -> None:
        self._spans: list[_Span] = []
        self._limit = COMPACT_AT

    def add(self, start: int, end: int, name: str) -> None:
        self._spans.append((start, end, name, end))
        if len(self._spans) >= self._limit:
            self._spans = _merged(self._spans, MIN_GAP_NS)
            self._limit = max(COMPACT_AT, 2 * len(self._spans))

    def __len__(self) -> int:
        return len(self._spans)

    def idle(self, steps: Sequence[Step]) -> list[tuple[int, int, int, str]]:
        """(step position, start ns, end ns, the activity that ends it) of each idle span inside a step,
        as ``agent.intervals.idle_spans`` gives them (spans shorter than ``MIN_GAP_NS`` may be left out)."""
        return idle_between(((start, stop, name) for start, _, name, stop in _merged(self._spans, 0)), steps)


def _merged(spans: list[_Span], within: int) -> list[_Span]:
    """The spans in time order, those less than ``within`` ns after the busy time before them joined to it
    (the first activity's own end and name kept, so ties sort as the agent sorts single activities)."""
    out: list[_Span] = []
    for span in sorted(spans):
        if out and span[0] - out[-1][3] < within:
            if span[3] > out[-1][3]:
                out[-1] = out[-1][:3] + (span[3],)
        else:
            out.append(span)
    return out
