"""The profiler's schedule: a recorded window long enough to pin down the mean step, within an event budget.

Unless ``active`` is given (``--active N`` fixes the window), the window is
adaptive: it records at least ``MIN_ACTIVE`` steps and at least two whole
worker cycles (two steps per DataLoader worker), then ends once the 95 %
interval of the mean step is within ``TARGET_HALF_WIDTH`` of it
(``step_stats.mean_half_width``, over blocks that follow the steps' rhythm),
or at ``MAX_ACTIVE`` steps or ``MAX_RECORD_S`` seconds of recording, whichever
comes first.  The decision is taken at the end of a recorded step and makes the
next step the last one (torch's schedule cannot end a window on the step that
is already running).

Everything after the window (torch's own post-processing, the trace export,
the event-tree walk) costs time per profiler event, and a step with a Python
loop per pixel makes ~100,000 of them.  So the Python calls of the last step
before the profiler starts are counted (``sys.setprofile``, one step only) and,
when ``active`` steps of that many would exceed ``max_events``, fewer steps are
recorded (at least one).  Unless Python frames are asked for (``python_frames``
``on``), a step too heavy for even ``MIN_ACTIVE`` of them (or all of a shorter
fixed window) to fit is recorded
*without* Python frames instead (``stackless``): the window keeps its steps, the
profiler records ops and ranges only, and the frame samples name the lines.  The
frames are what makes such a step costly: torch's Python tracer slowed the
per-pixel loop of bench/starvation_lab.py by half (64 against 43 ms a step),
and each of its ~90,000 frame events a step is post-processed, walked and held
in memory after the window.  Calls made while torch.compile compiles are not
counted (``compiling``): a recompile in that step is not the step's volume.
The schedule is otherwise torch's ``schedule(..., repeat=1)``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, List, Optional

from torch.profiler import ProfilerAction

from .step_stats import MAX_ACTIVE, MAX_RECORD_S, MIN_ACTIVE, TARGET_HALF_WIDTH, mean_half_width

PYTHON_FRAMES = ("auto", "on", "off")  # record Python frames: when the event budget allows, always, never


class Window:
    """``skip_first`` ignored steps, ``wait`` plain, ``warmup`` profiled and discarded, ``active`` recorded; once."""

    def __init__(self, skip_first: int, wait: int, warmup: int, active: Optional[int], max_events: int = 0,
                 clock: Callable[[], float] = time.perf_counter, python_frames: str = "auto") -> None:
        if python_frames not in PYTHON_FRAMES:
            raise ValueError(f"python_frames must be one of {', '.join(PYTHON_FRAMES)}, not {python_frames!r}")
        self.skip_first, self.wait, self.warmup = skip_first, wait, warmup
        self.python_frames = python_frames
        self.stackless = python_frames == "off"  # record without Python frames (lines from the frame samples)
        self.adaptive = active is None  # record until the mean step is known (see the module docstring)
        self.asked = self.active = MAX_ACTIVE if active is None else max(1, active)
        self.max_events = max_events  # 0: record every step asked for
        self.durations_ms: List[float] = []  # the recorded steps' times, as the window saw them
        self.half_width: Optional[float] = None  # of the mean step, when the adaptive window ended
        self.ended_by = ""  # why an adaptive window ended (see ``summary``)
        self._clock = clock
        self._recording_since = 0.0
        self._step_began = 0.0
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
            if self.python_frames == "auto" and self.events_per_step * min(self.asked, MIN_ACTIVE) > self.max_events:
                self.stackless = True  # the steps stay; their Python frames go (see the module docstring)
            elif not self.stackless:
                self.active = max(1, min(self.asked, self.max_events // self.events_per_step))

    def recorded_step_ends(self, step: int, workers: Optional[int]) -> None:
        """Called at the end of step ``step`` (before ``prof.step()``): time it and, when the window is
        adaptive and knows the mean step well enough, make the next step its last."""
        now = self._clock()
        index = step - (self.skip_first + self.wait + self.warmup)
        if index < 0 or index >= self.active or not self._step_began:
            return
        self.durations_ms.append((now - self._step_began) * 1000.0)
        if not self.adaptive:
            return
        self.half_width = mean_half_width(self.durations_ms)
        recorded = index + 1
        if index + 2 >= self.active or recorded < max(MIN_ACTIVE, 2 * (workers or 0)):
            return
        if self.half_width is not None and self.half_width <= TARGET_HALF_WIDTH:
            self.ended_by = "interval"
        elif now - self._recording_since >= MAX_RECORD_S:
            self.ended_by = "time"
        else:
            return
        self.active = index + 2

    def step_begins(self, action: ProfilerAction) -> None:
        """Called after ``prof.step()``: a step starts; it is timed when it is recorded."""
        recording = action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        self._step_began = self._clock() if recording else 0.0
        if recording and not self._recording_since:
            self._recording_since = self._step_began

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

    def ended_early_note(self) -> str:
        """The warning for an adaptive window that the script's end cut short."""
        self.ended_by = "script_end"
        known = f" (the mean step was known to \u00b1{self.half_width:.0%})" if self.half_width is not None else ""
        return (f"the script ended after {len(self.durations_ms)} recorded steps, before the mean step was known to "
                f"\u00b1{TARGET_HALF_WIDTH:.0%}{known}: the report covers those steps")

    def summary(self) -> dict:
        """agent.json's ``meta.window``: how the window was sized and why it ended (``interval``: the mean
        step known well enough; ``time`` or ``steps``: a cap; ``events``: the event budget of heavy steps;
        ``script_end``; "" for a fixed window)."""
        if self.adaptive and not self.ended_by and self.durations_ms:
            self.ended_by = "steps" if self.active == self.asked else "events"  # the cap, or the event budget
        return {"adaptive": self.adaptive, "recorded": len(self.durations_ms), "ended_by": self.ended_by,
                "python_frames": not self.stackless,
                "half_width": None if self.half_width is None else round(self.half_width, 5),
                "target_half_width": TARGET_HALF_WIDTH if self.adaptive else None}

    def note(self) -> Optional[str]:
        """Why fewer steps were recorded than asked for, or why without Python frames (None: neither)."""
        if self.stackless and self.python_frames == "auto" and self.events_per_step:
            return (
                f"each step makes about {self.events_per_step:,} Python calls, more than --max-events "
                f"{self.max_events:,} allows for {min(self.asked, MIN_ACTIVE)} steps with Python frames: the window was recorded without "
                f"them (ops and ranges only), and its lines come from frame samples (--python-frames on records them)"
            )
        if self.active >= self.asked or self.adaptive:
            return None
        return (
            f"each step makes about {self.events_per_step:,} profiler events (the Python calls of a plain step): "
            f"recording {self.active} of the {self.asked} steps asked for keeps the analysis within --max-events "
            f"{self.max_events:,}"
        )
