"""Pause Python's cyclic garbage collector while analyses run: one pause per process, in any thread.

Both hosts keep it off while they analyse: the batch checker for a whole check (the analysis
allocates millions of ast objects and keeps them to the end; with the collector on, its passes
over them took 35-45 % of a folder check's CPU, bench/RESULTS.md, and a one-shot check frees no
cyclic garbage early enough to matter), the language server for each analysis (one allocates tens
of thousands of objects and frees them by reference counting, leaving no reference cycles, see
``analysis/incremental/memo.py``, so a collection triggered in the middle of one only scans the
document's syntax trees, 30-130 ms on a long file, and delays the diagnostics).  Analyses may
overlap (the server runs them in worker threads): the collector stays off until the last one
ends, then is turned back on if it was on when the first began.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator


class CollectorPause:
    """Keeps Python's cycle collector off while analyses run (in any thread)."""

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
