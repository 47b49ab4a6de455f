"""The ``record_function`` / module ranges of the stepping thread (``user_annotation``: ``## forward ##``,
``DistributedDataParallel.forward``, ``Optimizer.step#SGD.step``...), per name: the time inside the range
(inclusive; a range nested in one of the same name counted once) and the time it is the innermost range open
(``self``), clipped to the recorded steps.  What names hot spots in a trace with no Python frames and no
"Call stack".  Fed in time order by the sweep; bounded: past ``RANGE_NAMES`` names, a new name's time is
summed as "other".  The sweep also hands it each operator's and runtime call's own time on the stepping thread
(``work``), summed per range under the innermost range open when the call began: what runs inside
``## backward ##`` (bounded too: past ``WORK_NAMES`` names in one range, the half with least time is
summed as "(other)").
"""

from __future__ import annotations

from typing import Any

from .steps import StepClock

RANGE_NAMES = 256
RANGE_ROWS = 20
WORK_NAMES = 256  # operator names kept per range
WORK_ROWS = 5  # of them in the block
OTHER_WORK = "(other)"


class RangeTable:
    """``add`` each range of the stepping thread in start order, then ``finish`` and ``block``."""

    def __init__(self, clock: StepClock, limit: int = RANGE_NAMES) -> None:
        self.clock = clock
        self.limit = limit
        self.stats: dict[str, list[Any]] = {}  # name -> [inclusive ns, self ns, calls, parent name]
        self.work: dict[str, dict[str, int]] = {}  # range name -> operator name -> own ns inside it
        self.other_ns = 0
        self._open: list[tuple[int, str, int]] = []  # (end, name, start) of the ranges open now, outermost first
        self._cursor = 0
        self._until: dict[str, int] = {}  # name -> end of the last range of that name counted

    def _in_steps(self, start: int, end: int) -> int:
        return sum(ns for _, ns in self.clock.split(start, end)) if end > start else 0

    def _advance(self, t: int) -> None:
        """Charge the time up to ``t`` to the innermost open range, closing those that end on the way."""
        while self._open and self._open[-1][0] <= t:
            end, name, _ = self._open.pop()
            if end > self._cursor:
                self._self(name, self._cursor, end)
                self._cursor = end
        if self._open and t > self._cursor:
            self._self(self._open[-1][1], self._cursor, t)
        self._cursor = max(self._cursor, t)

    def _self(self, name: str, start: int, end: int) -> None:
        entry = self.stats.get(name)
        if entry is not None:
            entry[1] += self._in_steps(start, end)

    def add(self, name: str, start: int, end: int) -> None:
        self._advance(start)
        if self._open and end > self._open[-1][0]:
            end = self._open[-1][0]  # a range outliving its enclosing one: cut, as the sweep cuts events
        entry = self.stats.get(name)
        if entry is None:
            if len(self.stats) >= self.limit:
                self.other_ns += self._in_steps(start, end)
                return
            entry = self.stats[name] = [0, 0, 0, self._open[-1][1] if self._open else ""]
        counted_from = max(start, self._until.get(name, start))
        entry[0] += self._in_steps(counted_from, end)
        entry[2] += self.clock.step_of(start) >= 0
        self._until[name] = max(end, self._until.get(name, end))
        self._open.append((end, name, start))

    def work_in(self, name: str, start: int, own_ns: int) -> None:
        """An operator or runtime call that began at ``start`` ran ``own_ns`` on top of the stepping thread's stack."""
        if own_ns <= 0:
            return
        for end, range_name, range_start in reversed(self._open):
            if range_start <= start < end:
                break
        else:
            return
        ops = self.work.get(range_name)
        if ops is None:
            if range_name not in self.stats:
                return
            ops = self.work[range_name] = {}
        ops[name] = ops.get(name, 0) + own_ns
        if len(ops) > WORK_NAMES:  # keep the half with most time; the rest is summed as "(other)"
            ranked = sorted(ops.items(), key=lambda kv: (kv[0] != OTHER_WORK, kv[1]))
            dropped = ranked[:len(ranked) - WORK_NAMES // 2]
            for op, _ in dropped:
                del ops[op]
            ops[OTHER_WORK] = ops.get(OTHER_WORK, 0) + sum(ns for _, ns in dropped)

    def finish(self) -> None:
        self._advance(1 << 62)

    def block(self, rows: int = RANGE_ROWS) -> dict[str, Any]:
        """The ``rows`` names with most inclusive time: [name, inclusive ns, self ns, calls, parent, work], ``work``
        the ``WORK_ROWS`` operators with most own time directly inside it ([[name, ns]]); the step time."""
        ranked = sorted(self.stats.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return {
            "ranges": [[name, incl, own, calls, parent, self._top_work(name)]
                       for name, (incl, own, calls, parent) in ranked[:rows] if incl > 0],
            "names": len(self.stats),
            "step_ns": sum(s.end_ns - s.start_ns for s in self.clock.steps),
        }

    def _top_work(self, name: str) -> list[list[Any]]:
        ops = self.work.get(name, {})
        return [[op, ns] for op, ns in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:WORK_ROWS]]
