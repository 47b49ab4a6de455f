"""Charging the events that are not Python or operator calls: allocations and Kineto activity.

An allocation is recorded against the chain of the code that made it; a CUDA
runtime call (launch, synchronize) on the CPU is charged like an op and
remembered by correlation id, so that the GPU kernel or copy it started is
attributed to the same chain, step and matmul / convolution shape; GPU activity
met outside any user chain waits until the walk ends (``_orphans``) and then
takes its launch's.  A layer of ``Collector`` (``collect.py``).  Standard
library and torch only.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .event_tree import KINETO, NodeState, is_runtime
from .step_timeline import StepTimeline
from .wire import Alloc, GpuActivity, Sync, is_gpu_annotation

CUDA_SYNCS = {
    "cudaStreamSynchronize": "stream_sync",
    "cudaDeviceSynchronize": "device_sync",
    "cudaEventSynchronize": "event_sync",
    "cuda_sync": "stream_sync",
}


class DeviceEvents(StepTimeline):
    """Allocation and Kineto (CUDA runtime, GPU kernel) nodes of the tree."""

    def _allocation(self, node: Any, start: int, state: NodeState) -> None:
        fields = node.extra_fields
        chain, root = state.chain, state.root
        if state.scope >= 0:
            chain = chain + (state.scope,)
        device = fields.device
        chain_id = self._chain(chain)
        self.allocs.append(
            Alloc(self._step_of(start), chain_id, root, start, int(fields.alloc_size),
                  int(fields.total_allocated), int(fields.ptr), getattr(device, "type", str(device)))
        )
        if self.dtypes is not None:
            self.dtypes.allocation(fields, chain_id, root)

    def _kineto(self, node: Any, start: int, state: NodeState) -> None:
        name = node.name
        if is_runtime(name):
            self._launches[node.correlation_id] = (state.chain, state.root, start, state.shape)
            main = node.start_tid == self.main_tid
            step = self._step_of(start)
            sync = CUDA_SYNCS.get(name)
            ns = node.duration_time_ns
            if sync and state.ctx != "data_loading":
                self.syncs.append(Sync(step, self._chain(state.chain), state.root, sync, name, ns))
                category = "host_sync"
            else:
                category = state.ctx or ("launch_overhead" if "Launch" in name else "compute")
            if step >= 0:
                self._charge(step, state.chain, category, name, state.root, main, ns)
                self.op_table.add(name, "cpu", main, ns, ns, (self._chain(state.chain), state.root), ns)
            for child in node.children:  # torch hangs the kernel or copy under the call that launched it
                if child.tag.value == KINETO and not is_runtime(child.name):
                    self.events += 1
                    self._device_activity(child, state)
            return
        self._device_activity(node, state)

    def _device_activity(self, node: Any, state: NodeState) -> None:
        """A GPU kernel, copy or memset.  Not work: a node with no launch to tie it to (correlation id 0),
        and a ``record_function`` range mirrored on the GPU's timeline (``ProfilerStep#N``, the ranges
        met in this walk), which on an H100 came with a correlation id of its own."""
        if not node.correlation_id or is_gpu_annotation(node.name) or node.name in self.annotations:
            return
        if state.chain or state.root >= 0:
            self._gpu_activity(node, (state.chain, state.root), state.shape)
        else:
            self._orphans.append(node)

    def _gpu_activity(self, node: Any, owner: Optional[Tuple[Tuple[int, ...], int]], shape: int = -1) -> None:
        launch = self._launches.get(node.correlation_id)
        if owner is None:
            owner = (launch[0], launch[1]) if launch else ((), -1)
        if shape < 0 and launch:
            shape = launch[3]
        step = self._step_of(launch[2] if launch else node.start_time_ns)
        chain = self._chain(owner[0])
        self.gpu.append(GpuActivity(step, chain, owner[1], node.name, node.start_time_ns, node.duration_time_ns))
        if step >= 0:
            ns = node.duration_time_ns
            self.op_table.add(node.name, "cuda", True, ns, ns, (chain, owner[1]), ns)
            self.shapes.kernel(shape, ns)
