"""A rich progress display fed by the agent's JSON events (phase and step)."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn


class ProgressDisplay:
    """Shows starting -> waiting/warm-up -> recording step k/N -> analysing."""

    def __init__(
        self, active_steps: int, console: Optional[Console] = None, enabled: bool = True, json_lines: bool = False
    ) -> None:
        self.active_steps = max(1, active_steps)
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        # Machine-readable progress for editors: one JSON object per line on stdout,
        # {"event": "progress", "message": str, "percentage": int}, instead of the bar.
        self.json_lines = json_lines
        self.recorded = 0
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(), console=self.console, transient=True, disable=not enabled or json_lines,
        )
        self.task: Optional[TaskID] = None

    def __enter__(self) -> "ProgressDisplay":
        self.progress.start()
        self.task = self.progress.add_task("starting the script", total=self.active_steps)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def describe(self, text: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, description=text)
        if self.json_lines:
            percentage = int(100 * min(self.recorded, self.active_steps) / self.active_steps)
            line = json.dumps({"event": "progress", "message": text, "percentage": percentage})
            print(line, file=sys.stdout, flush=True)

    def handle(self, event: dict[str, Any]) -> None:
        """Update from one agent event."""
        kind = event.get("event")
        if kind == "phase":
            phase = event.get("phase")
            if phase == "running":
                self.describe(f"running on {event.get('device', '?')}, waiting for the first step")
            elif phase == "analysing":
                self.describe("analysing the recorded steps")
        elif kind == "mode":
            self.describe(f"steps detected by {event.get('mode')}")
        elif kind == "step":
            phase = event.get("phase")
            step = event.get("step")
            if isinstance(event.get("active"), int) and event["active"] >= 1 and not self.recorded:
                self.active_steps = event["active"]  # the agent may record fewer steps than asked (heavy steps)
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
            print(line, file=sys.stdout, flush=True)
        elif self.enabled:
            self.progress.console.print(line, markup=False, highlight=False)
