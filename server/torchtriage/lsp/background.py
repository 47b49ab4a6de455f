"""Background tasks whose failure is logged and shown, not lost."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Coroutine

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]


class Background:
    """Starts tasks on the running loop; reports a task that fails through ``report``."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> "asyncio.Task[Any]":
        """Run a coroutine in the background."""
        task = asyncio.ensure_future(coroutine)
        task.add_done_callback(self._log_failure)
        return task

    def _log_failure(self, task: "asyncio.Future[Any]") -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())
            self._report(f"torchtriage: internal error: {task.exception()}")
