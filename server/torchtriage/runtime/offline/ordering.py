"""Records in time order with bounded memory: an external merge sort through temporary files.

Kineto does not write a trace in time order: each thread's operators come as a
block, then the runtime calls, the GPU activity, and the Python frames last
(measured on torch 2.11 and 2.13 traces).  Nesting an operator in its Python
frame needs both in one time-ordered stream, so the records are sorted: up to
``RUN`` of them in memory at a time, each full run sorted and written with
``marshal`` to a temporary file, and the runs merged (``heapq.merge``) as they
are read back ``BATCH`` records at a time.  A trace whose records fit in one
run never touches the disk.  Memory is about ``RUN`` records (plus what a caller
``append``s between two ``settle`` calls) and ``BATCH`` per run, whatever the
trace's size.
"""

from __future__ import annotations

import heapq
import marshal
import os
import tempfile
from typing import IO, Iterable, Iterator, Optional

from .events import Record

RUN = 200_000  # records sorted in memory at a time
BATCH = 2_048  # records per marshal block in a run file


class SortedRecords:
    """Collects records (``add``; or ``append``, then ``settle`` now and then), then yields them all in order
    (``__iter__``, once)."""

    def __init__(self, run: int = RUN, folder: Optional[str] = None) -> None:
        self.run = run
        self.folder = folder
        self._buffer: list[Record] = []
        self.append = self._buffer.append  # no check of the run's size: call ``settle`` every few thousand
        self._files: list[IO[bytes]] = []
        self._spilled = 0

    @property
    def count(self) -> int:
        return self._spilled + len(self._buffer)

    def add(self, record: Record) -> None:
        self._buffer.append(record)
        if len(self._buffer) >= self.run:
            self._spill()

    def settle(self) -> None:
        """Write the run out when it is full (after ``append``)."""
        if len(self._buffer) >= self.run:
            self._spill()

    @property
    def spilled_runs(self) -> int:
        return len(self._files)

    def _spill(self) -> None:
        buffer = self._buffer
        buffer.sort()
        handle = tempfile.TemporaryFile(prefix="torchtriage-analyze-", dir=self.folder)
        for i in range(0, len(buffer), BATCH):
            marshal.dump(buffer[i:i + BATCH], handle)
        handle.seek(0)
        self._files.append(handle)
        self._spilled += len(buffer)
        buffer.clear()  # the same list, so ``append`` stays bound to it

    def __iter__(self) -> Iterator[Record]:
        if not self._files:
            self._buffer.sort()
            buffer, self._buffer = self._buffer, []
            self.append = self._buffer.append
            return iter(buffer)
        if self._buffer:
            self._spill()
        return self._merged()

    def _merged(self) -> Iterator[Record]:
        try:
            yield from heapq.merge(*(_read_run(handle) for handle in self._files))
        finally:
            self.close()

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        self._files = []
        self._buffer.clear()


def _read_run(handle: IO[bytes]) -> Iterable[Record]:
    size = os.fstat(handle.fileno()).st_size
    while handle.tell() < size:
        yield from marshal.load(handle)
