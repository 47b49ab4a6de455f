"""How long compilation took and what dynamo counted, for one lab run.

``CompileWatch`` times every compilation through dynamo's start/end callbacks
(frame compiles, lazily compiled backward graphs, CUDA-graph recordings), so
the lab can take compile time out of the step times.  ``dynamo_counts`` is the
one place that reads ``torch._dynamo.utils.counters``.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple


class CompileWatch:
    """Compile intervals (``perf_counter`` seconds) and compile ids, from dynamo's callbacks."""

    def __init__(self) -> None:
        self.intervals: List[Tuple[float, float]] = []
        self.ids: List[Tuple[str, str]] = []  # (trigger name, compile id)
        self._started: Optional[float] = None
        self._handler: Any = None

    def install(self) -> None:
        try:
            from torch._dynamo.callback import callback_handler
        except Exception:  # a torch without dynamo: nothing compiles
            return
        callback_handler.register_start_callback(self._start)
        callback_handler.register_end_callback(self._end)
        self._handler = callback_handler

    def uninstall(self) -> None:
        if self._handler is not None:
            for remove, callback in ((self._handler.remove_start_callback, self._start), (self._handler.remove_end_callback, self._end)):
                try:
                    remove(callback)
                except ValueError:
                    pass
            self._handler = None

    def _start(self, args: Any) -> None:
        self._started = time.perf_counter()
        self.ids.append((getattr(args.callback_trigger, "name", str(args.callback_trigger)), str(args.compile_id)))

    def _end(self, args: Any) -> None:
        if self._started is not None:
            self.intervals.append((self._started, time.perf_counter()))
            self._started = None

    def seconds(self) -> float:
        """All compile time so far."""
        return sum(end - start for start, end in self.intervals)

    def within(self, low: float, high: float) -> float:
        """Compile time inside ``[low, high]`` (a compile still running counts up to ``high``)."""
        spans = list(self.intervals)
        if self._started is not None:
            spans.append((self._started, high))
        return sum(max(0.0, min(end, high) - max(start, low)) for start, end in spans)

    def recompiles(self) -> int:
        """Frame compiles that were not a frame's first (dynamo ids ``frame/n`` with ``n`` > 0)."""
        count = 0
        for trigger, compile_id in self.ids:
            frame, _, attempt = compile_id.partition("/")
            if trigger == "DYNAMO" and frame.isdigit() and attempt.isdigit() and int(attempt) > 0:
                count += 1
        return count


def dynamo_counts() -> Dict[str, int]:
    """Graph breaks (summed over their reasons) and graphs captured, from dynamo's counters."""
    try:
        from torch._dynamo.utils import counters
    except Exception:
        return {"graph_breaks": 0, "graphs": 0}
    return {
        "graph_breaks": int(sum(counters.get("graph_break", {}).values())),
        "graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
    }
