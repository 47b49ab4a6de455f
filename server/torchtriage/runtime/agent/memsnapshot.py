"""``--memory-snapshot``: the CUDA caching allocator's history over the recorded window.

When the window starts recording (the first recorded step) ``MemorySnapshot.start``
turns on ``torch.cuda.memory._record_memory_history`` (every allocation and free,
with its stack, at most ``MAX_ENTRIES`` of them); when the window ends, before
the trace is exported, ``stop`` dumps ``memory_snapshot.pickle`` into the run
folder (``torch.cuda.memory._dump_snapshot``: open it at pytorch.org/memory_viz)
and turns the history off.  These are private torch functions: whatever they
raise comes back as a warning and the profile goes on without the snapshot.
Standard library at import (the host reads ``SNAPSHOT_NAME``); torch is
imported only inside the calls, in the agent.
"""

from __future__ import annotations

import os
from typing import Optional

SNAPSHOT_NAME = "memory_snapshot.pickle"  # in the run folder; agent.json's meta.memory_snapshot names it when written
MAX_ENTRIES = 100_000  # alloc/free events kept (a ring buffer: the newest win); each costs some KB in the pickle
CPU_WARNING = "--memory-snapshot needs a CUDA device; this run is on the CPU"


class MemorySnapshot:
    """The allocator's history between ``start`` and ``stop``, saved as ``SNAPSHOT_NAME`` in ``out_dir``."""

    def __init__(self, out_dir: str) -> None:
        self.path = os.path.join(out_dir, SNAPSHOT_NAME)
        self.started = False  # start() ran (once: a refusal is not retried every step)
        self.recording = False
        self.saved = False

    def start(self) -> Optional[str]:
        """Record the allocator's history from now on; a warning when torch refuses (else None)."""
        if self.started:
            return None
        self.started = True
        try:
            from torch.cuda import memory

            memory._record_memory_history(max_entries=MAX_ENTRIES)
        except Exception as exc:
            return f"--memory-snapshot: recording the CUDA memory history failed ({type(exc).__name__}: {exc}); no snapshot"
        self.recording = True
        return None

    def stop(self) -> Optional[str]:
        """Dump the history into the run folder, then stop recording; a warning when either fails (else None)."""
        if not self.recording:
            return None
        self.recording = False
        warning = None
        try:
            from torch.cuda import memory

            memory._dump_snapshot(self.path)
            self.saved = True
        except Exception as exc:
            warning = f"--memory-snapshot: saving the CUDA memory snapshot failed ({type(exc).__name__}: {exc})"
            _remove(self.path)
        try:
            from torch.cuda import memory

            memory._record_memory_history(enabled=None)
        except Exception as exc:
            warning = warning or f"--memory-snapshot: turning the CUDA memory history off failed ({type(exc).__name__}: {exc})"
        return warning


def _remove(path: str) -> None:
    """Delete a half-written snapshot, if any."""
    try:
        os.remove(path)
    except OSError:
        pass
