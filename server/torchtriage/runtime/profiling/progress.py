"""A rich progress display fed by the agent's JSON events (phase and step).

After the window, the agent announces each stage of its work (``phase``
events with a ``stage`` and, while it walks the event tree, a ``fraction``)
and the host adds its own (``stage``); the bar then follows the stage.  In
``--progress json`` mode such lines carry ``stage`` and, when known,
``stage_percentage`` beside the contract's ``message`` and ``percentage``
(which stays at the recording's percentage); the lines are built by
``progress_json.progress_line``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from ..agent.step_stats import MAX_ACTIVE
from .progress_json import progress_line


class ProgressDisplay:
    """Shows starting -> waiting/warm-up -> recording step k/N -> analysing."""

    def __init__(
        self, active_steps: Optional[int], console: Optional[Console] = None, enabled: bool = True, json_lines: bool = False
    ) -> None:
        self.active_steps = max(1, active_steps or MAX_ACTIVE)  # None: an adaptive window, at most MAX_ACTIVE steps
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        # Machine-readable progress for editors: one JSON object per line on stdout
        # (``progress_json``), instead of the bar.
        self.json_lines = json_lines
        self.recorded = 0
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(), console=self.console, transient=True, disable=not enabled or json_lines,
        )
        self.task: Optional[TaskID] = None
        self._stdout_lock = threading.Lock()  # events and the script's output arrive on different reader threads

    def __enter__(self) -> "ProgressDisplay":
        self.progress.start()
        self.task = self.progress.add_task("starting the script", total=self.active_steps)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def restart(self, text: str) -> None:
        """A new run of the same script (``--repeat``): the step count starts again from zero."""
        self.recorded = 0
        if self.task is not None:
            self.progress.update(self.task, total=self.active_steps, completed=0)
        self.describe(text)

    def describe(self, text: str, stage: Optional[str] = None, fraction: Optional[float] = None) -> None:
        if self.task is not None:
            if stage is None:
                self.progress.update(self.task, description=text)
            else:  # the bar follows the stage: its fraction, or an empty bar while unknown
                self.progress.update(self.task, description=text, total=100, completed=int(100 * (fraction or 0.0)))
        if self.json_lines:
            percentage = int(100 * min(self.recorded, self.active_steps) / self.active_steps)
            stage_percentage = None if fraction is None else int(100 * min(1.0, max(0.0, fraction)))
            self._write_line(progress_line(text, percentage, stage, stage_percentage))

    def stage(self, stage: str, fraction: Optional[float] = None) -> None:
        """A stage of the work after the window (the agent's or the host's)."""
        if self.recorded and self.active_steps != self.recorded:  # the window ended before the steps it had planned
            self.active_steps = self.recorded  # (an adaptive window, or the script's end): its recording is complete
            self.describe(f"recording step {self.recorded}/{self.recorded}")
            if self.task is not None:
                self.progress.update(self.task, total=self.active_steps, completed=self.recorded)
        text = f"analysing: {stage}" + (f" ({int(100 * fraction)} %)" if fraction is not None else "")
        self.describe(text, stage=stage, fraction=fraction)

    def handle(self, event: dict[str, Any]) -> None:
        """Update from one agent event."""
        kind = event.get("event")
        if kind == "phase":
            phase = event.get("phase")
            if phase == "running":
                self.describe(f"running on {event.get('device', '?')}, waiting for the first step")
            elif phase == "analysing":
                if event.get("stage"):
                    fraction = event.get("fraction")
                    self.stage(str(event["stage"]), float(fraction) if isinstance(fraction, (int, float)) else None)
                else:
                    self.describe("analysing the recorded steps")
        elif kind == "mode":
            self.describe(f"steps detected by {event.get('mode')}")
        elif kind == "step":
            phase = event.get("phase")
            step = event.get("step")
            if isinstance(event.get("active"), int) and event["active"] >= 1 and event["active"] != self.active_steps:
                # fewer steps than asked (heavy steps), or an adaptive window that knows the mean step well enough
                self.active_steps = max(event["active"], self.recorded)
                if self.task is not None:
                    self.progress.update(self.task, total=self.active_steps)
            if phase == "recording":
                self.recorded += 1
                self.describe(f"recording step {min(self.recorded, self.active_steps)}/{self.active_steps}")
                if self.task is not None:
                    self.progress.update(self.task, completed=min(self.recorded, self.active_steps))
            else:
                self.describe(f"{phase} (step {step})")
        elif kind == "done":
            self.describe(f"script finished: {event.get('status')}")

    def output(self, line: str) -> None:
        """The script's own output, printed above the bar (as plain lines in JSON mode)."""
        if self.json_lines:
            self._write_line(line)
        elif self.enabled:
            self.progress.console.print(line, markup=False, highlight=False)

    def _write_line(self, text: str) -> None:
        """One whole line on stdout: ``print`` writes the text and its newline separately, so two
        reader threads printing at once could join a JSON event and a line of output."""
        with self._stdout_lock:
            sys.stdout.write(text.rstrip("\n") + "\n")
            sys.stdout.flush()
