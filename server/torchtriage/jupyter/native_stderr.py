"""The profiled cell's file descriptor 2: torch's profiler chatter into output.log, the rest to the cell.

Kineto and c10 write their log lines (``profiler_start``/``profiler_stop``
markers, ``Completed Stage`` lines, allocator warnings) from C++ straight to
fd 2, below ``sys.stderr``: in a notebook they land in the cell's output.
While a cell runs under ``%%torchtriage``, :class:`NativeStderr` points fd 2
at a pipe; a thread reads it line by line, writes every line to the run's
output.log and forwards the lines that are not the profiler's
(:func:`~torchtriage.runtime.profiling.noise.is_profiler_noise`), byte for
byte, to what fd 2 was before (ipykernel's own pipe, which shows them in the
cell; a terminal under plain IPython).  Python-level ``sys.stderr`` writes in
ipykernel never reach fd 2 and are not touched.

A process started during the cell (a DataLoader worker) inherits the pipe: the
thread keeps forwarding until the last such writer closes it.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Callable, Optional

from ..runtime.profiling.noise import is_profiler_noise

FD = 2
PARTIAL_WAIT_S = 0.1  # a line without its newline yet is forwarded after this long with nothing more
JOIN_S = 0.5  # how long leaving waits for the reader to drain what the cell wrote


class NativeStderr:
    """Context manager: fd 2 through a filter while the block runs; ``log`` is written once a line comes.

    ``written`` tells afterwards whether output.log got anything."""

    def __init__(self, log: Path, is_noise: Callable[[str], bool] = is_profiler_noise) -> None:
        self.log = Path(log)
        self.is_noise = is_noise
        self.written = False
        self._saved: Optional[int] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def __enter__(self) -> "NativeStderr":
        if os.name == "nt":  # no select() on pipes there: fd 2 is left alone
            return self
        _flush_python_stderr()
        read, write = os.pipe()
        try:
            self._saved = os.dup(FD)
            os.dup2(write, FD)
        except OSError:  # no fd 2 to take over: leave it alone
            os.close(read)
            if self._saved is not None:
                os.close(self._saved)
                self._saved = None
            return self
        finally:
            os.close(write)
        self._thread = threading.Thread(target=self._pump, args=(read, self._saved), name="torchtriage-stderr", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: Optional[type], value: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self._saved is None:
            return
        try:
            _flush_python_stderr()
        finally:
            os.dup2(self._saved, FD)  # fd 2 is what it was: the pipe's last write end here is gone
        if self._thread is not None:
            self._thread.join(JOIN_S)  # a worker still holding the pipe: the thread drains it on its own

    def _pump(self, read: int, forward: int) -> None:
        """Read the pipe to its end; closes it and the saved fd 2 when done."""
        pending = b""
        try:
            while True:
                if pending and not select.select([read], [], [], PARTIAL_WAIT_S)[0]:
                    self._emit(pending, forward)  # a prompt without its newline: show it
                    pending = b""
                    continue
                chunk = os.read(read, 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._emit(line + b"\n", forward)
            if pending:
                self._emit(pending, forward)
        except OSError:
            pass
        finally:
            os.close(read)
            os.close(forward)

    def _emit(self, line: bytes, forward: int) -> None:
        with self._lock:
            try:
                with open(self.log, "ab") as log:
                    log.write(line)
                self.written = True
            except OSError:
                pass
        if not self.is_noise(line.decode("utf-8", errors="replace").rstrip("\r\n")):
            _write_all(forward, line)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            data = data[os.write(fd, data):]
        except InterruptedError:
            continue
        except OSError:
            return


def _flush_python_stderr() -> None:
    """What Python buffered for fd 2 goes out before fd 2 changes (plain IPython's sys.stderr is fd 2)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
