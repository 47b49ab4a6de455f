"""GPU work in a trace: kernels tied to the launch that queued them, and how busy the GPU was in each step.

A kernel, copy or memset names its launch by correlation id (``args.correlation``,
the same number on the runtime call); it belongs to the launch's step and user
chain, as in the agent (``agent/device_events.py``).  The GPU's busy time in a
step is the union of all GPU activity intervals inside the step's
``ProfilerStep`` range, whichever stream or launch they came from: the figure
users read as "GPU utilization".  The sync and sync-op names are the agent's
(``agent/device_events.py``, ``agent/node_visit.py``; a test keeps them equal:
those modules import torch, which analysing a trace does not need).
"""

from __future__ import annotations

from typing import Optional

from ..agent.wire import GpuActivity, is_gpu_annotation
from .steps import StepClock
from .tables import Tables

CUDA_SYNCS = {
    "cudaStreamSynchronize": "stream_sync",
    "cudaDeviceSynchronize": "device_sync",
    "cudaEventSynchronize": "event_sync",
    "cuda_sync": "stream_sync",
}
SYNC_OPS = {"aten::_local_scalar_dense": "item", "aten::item": "item", "aten::nonzero": "nonzero"}


class DeviceWork:
    """Launches by correlation id, the GPU activity records, and each step's busy time."""

    def __init__(self, clock: StepClock, tables: Tables) -> None:
        self.clock = clock
        self.tables = tables
        self.launches: dict[int, tuple[int, int]] = {}  # correlation -> (chain id, step position)
        self.gpu: list[GpuActivity] = []
        self.busy_ns = [0] * len(clock.steps)
        self._covered = 0  # GPU activity is met in start order: the union so far ends here
        self.unlinked = 0  # activity in the recorded steps whose launch is not in the trace

    def launch(self, correlation: int, chain: int, step: int) -> None:
        if correlation >= 0:
            self.launches[correlation] = (chain, step)

    def activity(self, name: str, start: int, duration: int, correlation: int) -> None:
        if is_gpu_annotation(name):
            return
        launch: Optional[tuple[int, int]] = self.launches.get(correlation) if correlation >= 0 else None
        if launch is None:
            chain, step = 0, self.clock.step_of(start)
            self.unlinked += step >= 0
        else:
            chain, step = launch
        self.gpu.append(GpuActivity(step, chain, -1, name, start, duration))
        if step >= 0:
            self.tables.ops.add(name, "cuda", True, duration, duration, chain, duration)
        end = start + duration
        low = max(start, self._covered)
        if end > low:
            for position, ns in self.clock.split(low, end):
                self.busy_ns[position] += ns
            self._covered = end

    def busy_shares(self) -> list[float]:
        """Per step: the share of its range during which some GPU activity ran."""
        return [min(1.0, busy / (s.end_ns - s.start_ns)) if s.end_ns > s.start_ns else 0.0
                for busy, s in zip(self.busy_ns, self.clock.steps)]
