"""Clock reads and peak memory for the lab's measured steps.

On CUDA the device is synchronised before every clock read, so a step's time
is the work it queued, not how fast the host ran ahead.  Peak memory over the
measured steps: on CUDA ``torch.cuda.max_memory_allocated`` after a reset at
the first measured step; on CPU the peak resident set size (Linux ``VmHWM``,
reset through ``/proc/self/clear_refs``) above the resident size at that
moment, so libraries, compiled code and warm-up peaks are left out.
"""

from __future__ import annotations

import re
import time
from typing import Optional, Tuple

import torch

STATUS = "/proc/self/status"
CLEAR_REFS = "/proc/self/clear_refs"


def now(device: Optional[str]) -> float:
    """``perf_counter`` after the device has finished what was queued (CUDA)."""
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def _status_kib(field: str) -> Optional[int]:
    try:
        with open(STATUS, encoding="ascii") as handle:
            match = re.search(rf"^{field}:\s+(\d+) kB", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


class PeakMemory:
    """Peak memory between ``start`` and ``read``, and how it was measured."""

    def __init__(self) -> None:
        self.device: Optional[str] = None
        self.base_kib: Optional[int] = None
        self.note = ""

    def start(self, device: Optional[str]) -> None:
        self.device = device
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            return
        try:
            with open(CLEAR_REFS, "w", encoding="ascii") as handle:
                handle.write("5")  # resets VmHWM to the current resident size
        except OSError as exc:
            self.note = f"peak memory not measured: cannot reset the peak resident size ({exc})"
            return
        self.base_kib = _status_kib("VmRSS")

    def read(self) -> Tuple[Optional[int], Optional[str]]:
        """(bytes, measure) or (None, None) when it could not be measured."""
        if self.device == "cuda":
            return int(torch.cuda.max_memory_allocated()), "cuda_max_allocated"
        peak = _status_kib("VmHWM")
        if self.base_kib is None or peak is None:
            return None, None
        return max(0, peak - self.base_kib) * 1024, "cpu_peak_rss_growth"
