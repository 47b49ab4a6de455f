"""The recorded steps in the event tree, and how a stretch of time divides among them.

``StepTimeline`` finds the ``ProfilerStep#N`` ranges (searching only near the
agent's own ``prof.step()`` clock readings when it has them), tells which step
a time falls in, splits an event's self time into per-step pieces, drops the
steps past the event cap with what was charged to them, and measures each
step's compile time.  It is a layer of ``Collector`` (``collect.py``), on top
of the records it fills in (``walk_records.py``).  Standard library and torch only.
"""

from __future__ import annotations

import bisect
from typing import Any, Callable, Dict, List, Optional, Tuple

from .event_tree import ALLOCATION, TORCH_OP
from .intervals import uncovered
from .walk_records import WalkRecords
from .wire import Step

STEP_SLACK_NS = 2_000_000  # how far a ProfilerStep may start from the agent's own clock reading around prof.step()


class StepTimeline(WalkRecords):
    """Steps: finding them, placing times in them, and trimming them."""

    def _find_steps(self, roots: List[Any], hints: Optional[List[Tuple[int, int]]] = None) -> None:
        found: List[Tuple[Step, int]] = []
        if hints:  # only nodes around the agent's prof.step() calls can hold a ProfilerStep
            lows, highs = _merged((a - STEP_SLACK_NS, b + STEP_SLACK_NS) for a, b in hints)
            found = self._search_steps(roots, lambda s, e: _overlaps(lows, highs, s, e))
        if not hints or len(found) != len(hints):  # no hints, or the clocks disagree: search the whole tree
            found = self._search_steps(roots, None)
        found.sort(key=lambda f: f[0].start_ns)
        self.steps = [step for step, _ in found]
        self._step_starts = [s.start_ns for s in self.steps]
        if found:
            self.main_tid = found[0][1]

    @staticmethod
    def _search_steps(roots: List[Any], near: Optional[Callable[[int, int], bool]]) -> List[Tuple[Step, int]]:
        """(step, thread) of every ``ProfilerStep#N``; ``near(start, end)``: whether a node may hold one (a Kineto
        event's children too: see ``event_tree.with_misplaced``)."""
        stack = list(roots)
        found = []
        while stack:
            node = stack.pop()
            tag = node.tag.value
            if tag == TORCH_OP:
                name = node.name
                if name.startswith("ProfilerStep#"):
                    found.append((Step(int(name.split("#", 1)[1]), node.start_time_ns, node.end_time_ns), node.start_tid))
                    continue
            elif tag == ALLOCATION:
                continue
            if near is None or near(node.start_time_ns, node.end_time_ns):
                stack.extend(node.children)
        return found

    def _step_of(self, t: int) -> int:
        i = bisect.bisect_right(self._step_starts, t) - 1
        if i < 0 or t >= self.steps[i].end_ns:
            return -1
        return i

    def _split(self, start: int, end: int, children: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
        """Self time of [start, end) minus children, as (step position, ns) pieces."""
        if not children:  # a leaf: most often inside one step
            i = bisect.bisect_right(self._step_starts, start) - 1
            if i >= 0 and end <= self.steps[i].end_ns:
                return [(i, end - start)]
        pieces: Dict[int, int] = {}
        for g_start, g_end in uncovered(start, end, children):
            while g_start < g_end:
                i = bisect.bisect_right(self._step_starts, g_start) - 1
                if i < 0:  # before the first step
                    nxt = self._step_starts[0]
                    g_start = max(g_start, min(nxt, g_end))
                    continue
                s_end = self.steps[i].end_ns
                if g_start >= s_end:
                    nxt = self._step_starts[i + 1] if i + 1 < len(self.steps) else g_end
                    g_start = max(g_start, min(nxt, g_end))
                    continue
                piece_end = min(g_end, s_end)
                pieces[i] = pieces.get(i, 0) + piece_end - g_start
                g_start = piece_end
        return list(pieces.items())

    def _keep_steps(self, kept: int) -> None:
        """Drop the steps from ``kept`` on, and what was charged to them."""
        self.steps = self.steps[:kept]
        self._step_starts = self._step_starts[:kept]
        self.charges = {key: value for key, value in self.charges.items() if key[0] < kept}
        self.allocs = [a for a in self.allocs if a.step < kept]
        self.syncs = [s for s in self.syncs if s.step < kept]
        self.gpu = [g for g in self.gpu if g.step < kept]

    def _count_compiling(self) -> None:
        """Each step's ``compile_ns``: its overlap with the (merged) outermost compile ranges."""
        if not self._compile_spans:
            return
        lows, highs = _merged(self._compile_spans)
        steps = []
        for step in self.steps:
            ns = sum(max(0, min(high, step.end_ns) - max(low, step.start_ns)) for low, high in zip(lows, highs))
            steps.append(step._replace(compile_ns=ns))
        self.steps = steps


def _merged(intervals: Any) -> Tuple[List[int], List[int]]:
    """Sorted, disjoint intervals covering ``intervals``, as (starts, ends)."""
    lows: List[int] = []
    highs: List[int] = []
    for low, high in sorted(intervals):
        if highs and low <= highs[-1]:
            highs[-1] = max(highs[-1], high)
        else:
            lows.append(low)
            highs.append(high)
    return lows, highs


def _overlaps(lows: List[int], highs: List[int], start: int, end: int) -> bool:
    """Whether [start, end] meets one of the disjoint, sorted intervals [lows[i], highs[i]]."""
    i = bisect.bisect_left(highs, start)
    return i < len(lows) and lows[i] <= end
