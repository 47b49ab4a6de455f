"""Find and kill every process of one torchrun run, whatever session it ended up in.

torchrun starts each worker in a new session, so killing torchrun's process
group misses them, and a worker whose torchrun died is re-parented to init.
Every process of the run inherits ``TORCHTRIAGE_RUN=<id>`` from torchrun's
environment; ``/proc/<pid>/environ`` (Linux; readable for our own processes)
finds them all, DataLoader workers included.  Rank process groups, named by
the ranks' own pids, are killed too (they also hold children started with a
cleared environment).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Iterable

from ..profiling.groups import signal_group

MARKER_ENV = "TORCHTRIAGE_RUN"
ROUNDS = 5  # scans after a kill: processes forked while we scanned are caught by the next one


def marked_pids(marker: str) -> list[int]:
    """Pids of the processes whose environment carries ``TORCHTRIAGE_RUN=<marker>`` (never this one)."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        if _carries(int(entry), needle):
            found.append(int(entry))
    return found


def _carries(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return needle in handle.read().split(b"\0")
    except OSError:  # gone, or not ours
        return False


def kill_marked(marker: str) -> list[int]:
    """SIGKILL every process of the run (a few rounds); returns the pids killed."""
    killed: list[int] = []
    for _ in range(ROUNDS):
        pids = [p for p in marked_pids(marker) if _alive(p)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return killed


def kill_groups(leaders: Iterable[int], marker: str) -> None:
    """SIGKILL the process group of each rank: when its leader still runs only if it carries the marker
    (its pid cannot have been reused as a group id while the group exists)."""
    needle = f"{MARKER_ENV}={marker}".encode()
    for pid in leaders:
        if os.path.exists(f"/proc/{pid}") and not _carries(pid, needle) and _alive(pid):
            continue
        signal_group(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
