"""The machine a run had: physical cores, and the loader workers / intra-op threads they allow.

Advice quotes these numbers, so they must agree with each other: a worker count
never above what the cores allow, a thread count never 0.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path


def host_physical_cores() -> int:
    """Physical cores this process may use: distinct (package, core) pairs in sysfs, at
    most the CPUs in its affinity mask; ``os.cpu_count()`` where sysfs says nothing."""
    cores = set()
    for topology in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        try:
            package = Path(topology, "physical_package_id").read_text().strip()
            core = Path(topology, "core_id").read_text().strip()
        except OSError:
            continue
        cores.add((package, core))
    count = len(cores) or os.cpu_count() or 1
    try:
        count = min(count, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        pass
    return max(1, count)


@dataclass(frozen=True)
class WorkerPlan:
    """How many loader workers and intra-op threads the cores allow.

    One core stays with the training process, so at most ``cores - 1`` workers; the
    first try is half the cores; threads are what the workers leave, never 0."""

    cores: int
    current: int | None  # num_workers of the run (None: unknown)

    @property
    def cap(self) -> int:
        return max(1, self.cores - 1)

    @property
    def start(self) -> int:
        return max(1, min(self.cap, self.cores // 2))

    @property
    def at_cap(self) -> bool:
        return bool(self.current) and (self.current or 0) >= self.cap

    @property
    def target(self) -> int:
        """The workers to try next (the current count when the cores allow no more)."""
        if not self.current:
            return self.start
        return self.current if self.at_cap else min(self.cap, max(self.current * 2, self.start))

    @property
    def threads(self) -> int:
        return max(1, self.cores - self.target)
