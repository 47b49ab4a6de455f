"""The run's one Chrome trace: kineto's export, gzip-compressed, readable by torch-tb-profiler.

``trace.json.gz`` in the run folder is the only copy; ``tb/<run>/`` links to it
(a hard link, else a symbolic one, else a copy) under the name
torch-tb-profiler looks for (``*.pt.trace.json.gz``).  Perfetto and
chrome://tracing open the compressed file as it is.

Two edits on the way, both in place in kineto's text (no JSON round trip):

* torch-tb-profiler 0.4.3 drops every ``user_annotation`` event except
  ``ProfilerStep#N`` and collectives, and counts DataLoader time only from
  ``cpu_op`` events named ``enumerate(DataLoader)#...__next__`` (how older
  torch versions wrote them).  Those events' category is rewritten to
  ``cpu_op`` (padded with spaces to the same length), so its Overview shows
  the data-loading time instead of "Other".
* When the attribution kept fewer steps than were recorded (``max_events``),
  events that start after the last kept step are dropped, so the trace shows
  what the report covers and its size stays bounded.

Compression runs in a thread: zlib releases the GIL, so it overlaps the
event-tree walk.
"""

from __future__ import annotations

import gzip
import os
import re
import socket
import threading
from typing import Iterator, List, Optional, Sequence

TRACE_NAME = "trace.json.gz"
RAW_NAME = ".trace.raw.json"  # kineto's export, removed once compressed
LEVEL = 1  # gzip level: ~13x smaller than kineto's text at a fraction of level 6's time
CHUNK = 8 << 20

DATALOADER_NAMES = (b'"name": "enumerate(DataLoader)#', b'"name": "enumerate(DataPipe)#')
ANNOTATION = b'"cat": "user_annotation"'
CPU_OP = b'"cat": "cpu_op"'.ljust(len(ANNOTATION))
EVENTS_START = b'"traceEvents": ['
EVENT_END = b"\n  }"
EVENTS_END = b"\n  ]"
_TS = re.compile(rb'"ts": (-?[0-9.]+)')
_BASE = re.compile(rb'"baseTimeNanoseconds": (\d+)')
_PH = re.compile(rb'"ph": "(\w)"')


def relabel_dataloader(data: bytearray) -> int:
    """Make the loader's ``__next__`` annotations ``cpu_op`` events (same length); returns how many."""
    count = 0
    for name in DATALOADER_NAMES:
        at = data.find(name)
        while at >= 0:
            event = data.rfind(b"{", 0, at)
            cat = data.find(ANNOTATION, event, at)
            if event >= 0 and cat >= 0:
                data[cat:cat + len(ANNOTATION)] = CPU_OP
                count += 1
            at = data.find(name, at + len(name))
    return count


def cut_events(data: bytes | bytearray, end_ns: int) -> Optional[List[bytes | memoryview]]:
    """Kineto's text without the events that start at or after ``end_ns`` (metadata kept), as
    pieces to write; None when the text is not laid out as kineto writes it.  The pieces are views
    into ``data`` (runs of consecutive kept events, with kineto's separators between them), not
    copies: a cut trace costs no second copy of the export in memory."""
    start = data.find(EVENTS_START)
    base = _BASE.search(data, 0, start if start >= 0 else 0)
    close = data.rfind(EVENTS_END)
    if start < 0 or close < start:
        return None
    cut_us = (end_ns - (int(base.group(1)) if base else 0)) / 1000.0
    view = memoryview(data)
    pieces: List[bytes | memoryview] = [view[:start + len(EVENTS_START)], b"\n"]
    run_start = run_end = -1  # the run of kept events being gathered ([run_start, run_end) of ``data``)
    kept = False
    pos = data.find(b"{", start)
    while 0 <= pos < close:
        end = data.find(EVENT_END, pos, close)
        if end < 0:
            return None
        end += len(EVENT_END)
        ts = _TS.search(data, pos, end)
        ph = _PH.search(data, pos, end)
        if (ph is not None and ph.group(1) == b"M") or ts is None or float(ts.group(1)) < cut_us:
            if run_start < 0:
                if kept:
                    pieces.append(b",\n")
                run_start = pos
            run_end, kept = end, True
        elif run_start >= 0:
            pieces.append(view[run_start:run_end])
            run_start = -1
        pos = data.find(b"{", end, close)
    if run_start >= 0:
        pieces.append(view[run_start:run_end])
    pieces.append(view[close:])
    return pieces


class TraceWriter:
    """Compresses kineto's export into ``trace.json.gz`` in a thread and links it into ``tb/``."""

    def __init__(self, out_dir: str, run_name: str, tb_path: Optional[str] = None) -> None:
        self.out_dir = out_dir
        self.raw = os.path.join(out_dir, RAW_NAME)
        self.path = os.path.join(out_dir, TRACE_NAME)
        # tb_path: where the link goes instead (a torchrun rank links into the run's shared tb/)
        self.tb_path = tb_path or os.path.join(out_dir, "tb", run_name, f"{socket.gethostname()}.{os.getpid()}.pt.trace.json.gz")
        self.relabelled = 0
        self.error: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        self._cut_ns: Optional[int] = None

    def start(self) -> None:
        """Compress the whole export in the background."""
        self._thread = threading.Thread(target=self._run, name="torchtriage-trace", daemon=True)
        self._thread.start()

    def finish(self, cut_ns: Optional[int] = None) -> Optional[str]:
        """Wait for the file (re-written without the events from ``cut_ns`` on, if given), link it
        into tb/ and remove the export; returns a warning, or None."""
        if self._thread is not None:
            if cut_ns is not None:
                self._cut_ns = cut_ns  # the thread stops at its next chunk; then it is done here
            self._thread.join()
        if cut_ns is not None and self.error is None:
            self._write(cut_ns)
        try:
            os.remove(self.raw)
        except OSError:
            pass
        if self.error is not None:
            return f"trace export failed: {self.error}"
        self._link()
        return None

    def _run(self) -> None:
        try:
            self._write(None)
        except Exception as exc:  # keep the attribution even if the trace cannot be written
            self.error = f"{type(exc).__name__}: {exc}"

    def _write(self, cut_ns: Optional[int]) -> None:
        with open(self.raw, "rb") as handle:
            data = bytearray(handle.read())
        self.relabelled = relabel_dataloader(data)
        pieces: Optional[List[bytes | memoryview]] = None
        if cut_ns is not None:
            pieces = cut_events(data, cut_ns)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as raw_out, gzip.GzipFile(filename="trace.json", mode="wb", compresslevel=LEVEL, fileobj=raw_out, mtime=0) as out:
            for chunk in _chunks(pieces if pieces is not None else [data]):
                if cut_ns is None and self._cut_ns is not None:
                    return  # a cut was decided meanwhile: finish() writes the cut trace
                out.write(chunk)
        os.replace(tmp, self.path)

    def _link(self) -> None:
        os.makedirs(os.path.dirname(self.tb_path), exist_ok=True)
        for link in (os.link, os.symlink):
            try:
                if link is os.symlink:
                    os.symlink(os.path.relpath(self.path, os.path.dirname(self.tb_path)), self.tb_path)
                else:
                    link(self.path, self.tb_path)
                return
            except OSError:
                continue
        import shutil

        shutil.copyfile(self.path, self.tb_path)


def _chunks(pieces: Sequence[bytes | bytearray | memoryview]) -> Iterator[memoryview]:
    for piece in pieces:
        view = memoryview(piece)
        for at in range(0, len(view), CHUNK):
            yield view[at:at + CHUNK]
