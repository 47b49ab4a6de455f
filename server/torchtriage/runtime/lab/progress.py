"""Lab progress: which configuration runs and how far its steps are, as a bar or JSON lines.

JSON lines (``--progress json``, for editors) follow the profile command's
contract (``profiling/progress_json.py``): ``{"event": "progress", "message": str,
"percentage": int}`` on stdout, the percentage covering the whole lab (every planned run).
"""

from __future__ import annotations

from typing import Any, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from ..profiling.progress_json import progress_line
from .plan import Configuration


class LabProgress:
    """Follows the runs (``start``) and the agent's step events (``handle``)."""

    def __init__(self, steps: int, warmup: int, enabled: bool = True, json_lines: bool = False) -> None:
        self.steps = steps
        self.warmup = warmup
        self.json_lines = json_lines
        self.enabled = enabled
        self.runs = 1
        self.index = 0
        self.label = ""
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
            console=Console(stderr=True), transient=True, disable=not enabled or json_lines,
        )
        self.task: Optional[TaskID] = None

    def __enter__(self) -> "LabProgress":
        self.progress.start()
        self.task = self.progress.add_task("starting", total=100)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def _show(self, message: str, fraction: float) -> None:
        percentage = int(100 * (self.index - 1 + min(1.0, max(0.0, fraction))) / max(1, self.runs))
        if self.task is not None:
            self.progress.update(self.task, description=message, completed=percentage)
        if self.json_lines:
            print(progress_line(message, percentage), flush=True)

    def start(self, configuration: Configuration, repeat: int, index: int, runs: int) -> None:
        """Run ``index`` of ``runs`` begins."""
        self.index, self.runs = index, max(runs, index)
        self.label = f"{configuration.name} ({index}/{self.runs})" + (f" run {repeat}" if repeat > 1 else "")
        self._show(f"{self.label}: starting the script", 0.0)

    def handle(self, event: dict[str, Any]) -> None:
        """One event from the lab agent."""
        kind = event.get("event")
        total = self.warmup + self.steps
        if kind == "step":
            step = int(event.get("step") or 0)
            if event.get("phase") == "measuring":
                self._show(f"{self.label}: measuring step {event.get('measured')}/{self.steps}", step / total)
            else:
                self._show(f"{self.label}: warm-up step {step}/{self.warmup}", step / total)
        elif kind == "done":
            self._show(f"{self.label}: {event.get('status')}", 1.0)
