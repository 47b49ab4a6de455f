"""The profiler's schedule, with a recorded window sized to the steps' event volume.

Everything after the window (torch's own post-processing, the trace export,
the event-tree walk) costs time per profiler event, and a step with a Python
loop per pixel makes ~100,000 of them.  So the Python calls of the last step
before the profiler starts are counted (``sys.setprofile``, one step only) and,
when ``active`` steps of that many would exceed ``max_events``, fewer steps are
recorded (at least one).  Calls made while torch.compile compiles are not
counted (``compiling``): a recompile in that step is not the step's volume.
The schedule is otherwise torch's ``schedule(..., repeat=1)``.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from torch.profiler import ProfilerAction


class Window:
    """``skip_first`` ignored steps, ``wait`` plain, ``warmup`` profiled and discarded, ``active`` recorded; once."""

    def __init__(self, skip_first: int, wait: int, warmup: int, active: int, max_events: int = 0) -> None:
        self.skip_first, self.wait, self.warmup = skip_first, wait, warmup
        self.asked = self.active = max(1, active)
        self.max_events = max_events  # 0: record every step asked for
        self.events_per_step = 0  # counted Python calls of one plain step (0: not counted)
        self._count = 0
        self._counting = False
        self._compile_mark: Optional[int] = None  # the count when a compile started

    def __call__(self, step: int) -> ProfilerAction:
        step -= self.skip_first + self.wait
        if step < 0:
            return ProfilerAction.NONE
        if step < self.warmup:
            return ProfilerAction.WARMUP
        step -= self.warmup
        if step < self.active - 1:
            return ProfilerAction.RECORD
        return ProfilerAction.RECORD_AND_SAVE if step == self.active - 1 else ProfilerAction.NONE

    def before_step(self) -> None:
        """Called just before ``prof.step()``: a counted step is over; size the window."""
        if not self._counting:
            return
        sys.setprofile(None)
        self._counting = False
        self.events_per_step = self._count // 2  # a call and its return
        if self.max_events and self.events_per_step:
            self.active = max(1, min(self.asked, self.max_events // self.events_per_step))

    def after_step(self, step: int) -> None:
        """Called after ``prof.step()`` moved to ``step``: count the step before the profiler starts."""
        if self.max_events and self(step) == ProfilerAction.NONE and self(step + 1) != ProfilerAction.NONE:
            if sys.getprofile() is None:  # never displace the user's own profiler or debugger
                self._count = 0
                self._counting = True
                sys.setprofile(self._counter)

    def stop(self) -> None:
        if self._counting:
            sys.setprofile(None)
            self._counting = False

    def compiling(self, started: bool) -> None:
        """torch.compile starts (True) or ends compiling: the calls in between are dropped from the count."""
        if started:
            self._compile_mark = self._count
        elif self._compile_mark is not None:
            self._count, self._compile_mark = self._compile_mark, None

    def _counter(self, frame: Any, event: str, arg: Optional[Any]) -> None:
        self._count += 1

    def note(self) -> Optional[str]:
        """Why fewer steps were recorded than asked for (None if they were not)."""
        if self.active >= self.asked:
            return None
        return (
            f"each step makes about {self.events_per_step:,} profiler events (the Python calls of a plain step): "
            f"recording {self.active} of the {self.asked} steps asked for keeps the analysis within --max-events "
            f"{self.max_events:,}"
        )
