"""A typed, tolerant model of an exported chrome trace (``trace.json.gz`` or ``trace.json``).

Used to check an export and to read what the in-process tree may lack (GPU
kernels per step, when a recorded trace is analysed offline).  Events with
missing or odd fields are skipped, never fatal; nesting is not assumed.
"""

from __future__ import annotations

import gzip
import json
import zlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
GPU_ANNOTATIONS = ("gpu_user_annotation",)
STEP_PREFIX = "ProfilerStep#"


@dataclass(frozen=True)
class TraceEvent:
    name: str
    category: str
    start_us: float
    duration_us: float
    pid: Any
    tid: Any
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass
class Trace:
    events: list[TraceEvent]
    metadata: dict[str, Any]
    skipped: int = 0

    @property
    def steps(self) -> list[TraceEvent]:
        """The CPU's ``ProfilerStep#N`` ranges (not their mirror on the GPU's timeline)."""
        return sorted((e for e in self.events if e.name.startswith(STEP_PREFIX) and e.category not in GPU_ANNOTATIONS),
                      key=lambda e: e.start_us)

    def kernels(self) -> list[TraceEvent]:
        return [e for e in self.events if e.category in KERNEL_CATEGORIES]

    def launch_times(self) -> dict[Any, float]:
        """Correlation id -> when the CPU launched it (runtime and driver API calls)."""
        return {e.args.get("correlation"): e.start_us for e in self.events if e.category in LAUNCH_CATEGORIES}

    def kernels_per_step(self) -> list[int]:
        """GPU activities whose launch falls in each step (by correlation to the runtime call)."""
        launches = self.launch_times()
        launched = sorted(launches.get(k.args.get("correlation"), k.start_us) for k in self.kernels())
        counts = []
        for step in self.steps:
            counts.append(bisect_left(launched, step.end_us) - bisect_left(launched, step.start_us))
        return counts

    def device_work(self) -> dict[int, "StepWork"]:
        """Step number -> the GPU work its launches queued: busy time, NCCL time, when the last of it ended.

        Read here rather than from the agent's event tree, which on an H100 (torch 2.11) did not hold
        the backward pass's launches (they run on the autograd engine's device thread)."""
        steps = self.steps
        starts = [s.start_us for s in steps]
        launches = self.launch_times()
        work: dict[int, StepWork] = {}
        for kernel in self.kernels():
            launched = launches.get(kernel.args.get("correlation"))
            if launched is None:
                continue
            position = bisect_right(starts, launched) - 1
            if position < 0 or launched >= steps[position].end_us:
                continue
            number = steps[position].name[len(STEP_PREFIX):]
            work.setdefault(int(number) if number.isdigit() else position, StepWork()).add(kernel.name, kernel.start_us, kernel.duration_us)
        return work


@dataclass
class StepWork:
    """The GPU work one step's launches queued (times in the trace's microseconds)."""

    kernels: int = 0
    busy_us: float = 0.0
    communication_us: float = 0.0
    end_us: float = 0.0

    def add(self, name: str, start_us: float, duration_us: float) -> None:
        """One more kernel, copy or memset of the step (an NCCL kernel is communication too)."""
        self.kernels += 1
        self.busy_us += duration_us
        self.end_us = max(self.end_us, start_us + duration_us)
        if "nccl" in name.lower():
            self.communication_us += duration_us


def parse_events(raw: Iterable[Any]) -> tuple[list[TraceEvent], int]:
    events, skipped = [], 0
    for item in raw:
        if not isinstance(item, dict) or item.get("ph") != "X":
            skipped += not isinstance(item, dict)
            continue
        try:
            events.append(
                TraceEvent(
                    name=str(item.get("name", "")), category=str(item.get("cat", "")), start_us=float(item["ts"]),
                    duration_us=float(item.get("dur", 0.0)), pid=item.get("pid"), tid=item.get("tid"),
                    args=item.get("args") if isinstance(item.get("args"), dict) else {},
                )
            )
        except (KeyError, TypeError, ValueError):
            skipped += 1
    return events, skipped


def load_trace(path: Path) -> Trace:
    """Read a chrome trace (gzip-compressed when its name ends in .gz); raises ValueError when it is not one."""
    path = Path(path)
    try:
        text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # cut off while it was written, or not gzip at all
        raise ValueError(f"{path}: not a readable gzip file ({exc})") from exc
    data = json.loads(text)
    raw = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise ValueError(f"{path}: no traceEvents list")
    events, skipped = parse_events(raw)
    metadata = {k: v for k, v in data.items() if k != "traceEvents"} if isinstance(data, dict) else {}
    return Trace(events=events, metadata=metadata, skipped=skipped)
