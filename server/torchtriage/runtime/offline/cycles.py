"""A worker's profiling cycles: which of its trace files holds the most steps.

``schedule(wait, warmup, active, repeat)`` with ``tensorboard_trace_handler``
writes one file per worker per cycle.  The newest is not always the one to
read: a job that ends (or is stopped) inside a cycle writes it cut short, with
fewer steps than the cycles before.  ``step_count`` counts a file's distinct
``ProfilerStep#N`` names by scanning its bytes for them (no JSON decoding: a few
hundred MB/s), and ``fullest`` picks the file with the most steps, the newest of
those that tie.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import Sequence

STEP_NAME = re.compile(rb'"ProfilerStep#(\d+)"')
BLOCK = 1 << 22  # bytes scanned at a time
OVERLAP = 64  # bytes kept from one block to the next, so no name is cut in two


def step_count(path: Path) -> int:
    """The distinct ``ProfilerStep#N`` numbers in the trace at ``path`` (0 when it cannot be read)."""
    numbers: set[bytes] = set()
    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as handle:
            tail = b""
            while True:
                block = handle.read(BLOCK)
                if not block:
                    break
                text = tail + block
                numbers.update(m.group(1) for m in STEP_NAME.finditer(text))
                tail = text[-OVERLAP:]
    except (OSError, EOFError, zlib.error):
        pass  # a damaged file counts what was read before the damage
    return len(numbers)


def fullest(runs: Sequence[tuple[float, Path]]) -> tuple[tuple[float, Path], dict[Path, int]]:
    """Of one worker's (time, file) cycles, the one with the most steps (the newest of a tie), and each file's count."""
    counts = {path: step_count(path) for _, path in runs}
    best = max(runs, key=lambda run: (counts[run[1]], run[0]))
    return best, counts
