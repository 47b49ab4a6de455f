"""Background tasks whose failure is logged and shown, not lost; the collector paused during analyses."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from contextlib import contextmanager
from typing import Any, Callable, Coroutine, Iterator

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


class CollectorPause:
    """Keeps Python's cycle collector off while analyses run (in any thread).

    An analysis allocates tens of thousands of objects and frees them by reference
    counting (it leaves no reference cycles, see ``analysis/incremental/memo.py``), so a collection
    triggered in the middle of one only scans the document's syntax trees, 30-130 ms on a
    long file, and delays the diagnostics.  Collections resume when no analysis runs.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0

    @contextmanager
    def during_analysis(self) -> Iterator[None]:
        with self._lock:
            self._running += 1
            if self._running == 1:
                self._was_enabled = gc.isenabled()
                gc.disable()
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0 and self._was_enabled:
                    gc.enable()


collector_pause = CollectorPause()  # one collector per process, so one pause for it
