"""What the training state holds and how the math is set up, read once when the window ends.

``OptimizerRegistry`` keeps a weak reference to every optimizer that steps
(a global optimizer step *pre*-hook: step detection's post-hook saves the
window, and removes itself, while torch iterates over the post-hooks).  When the window
is saved, ``held_storages`` lists the storages of their parameters, gradients
and state (one record per storage, by allocation address, so the host can
tell them apart among the allocations the profile recorded), and
``device_facts`` reads the float32 matmul precision, the TF32 switches, the
GPU's compute capability and the caching allocator's figures.  Standard
library and torch only: this runs in the agent.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Dict, List, Tuple

import torch

from .wire import DeviceFacts, Held, OptimizerInfo


class OptimizerRegistry:
    """Every optimizer that stepped while installed (weakly held).

    A pre-hook, removed only when the run ends: the window is saved inside torch's loop over the
    post-hooks, which must see no other post-hook come or go."""

    def __init__(self) -> None:
        self.optimizers: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._handle: Any = None

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._handle = register_optimizer_step_pre_hook(self._stepping)

    def uninstall(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _stepping(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.optimizers.add(optimizer)


def _storage(tensor: Any) -> Tuple[str, int, int]:
    storage = tensor.untyped_storage()
    return tensor.device.type, int(storage.data_ptr()), int(storage.nbytes())


def _implementation(optimizer: Any) -> str:
    defaults = getattr(optimizer, "defaults", {}) or {}
    if defaults.get("fused"):
        return "fused"
    if defaults.get("foreach") is True:
        return "foreach"
    if defaults.get("foreach") is False:
        return "for-loop"
    return "default"


def held_storages(registry: OptimizerRegistry) -> Tuple[List[Held], List[OptimizerInfo]]:
    """The storages of the registered optimizers' parameters, gradients and state (each storage
    once, the first kind that names it wins), and one summary per optimizer."""
    seen: Dict[Tuple[str, int], str] = {}
    held: List[Held] = []
    infos: List[OptimizerInfo] = []

    def add(kind: str, tensor: Any) -> int:
        if not isinstance(tensor, torch.Tensor) or tensor.is_sparse:
            return 0
        device, ptr, nbytes = _storage(tensor)
        if not ptr or (device, ptr) in seen:
            return 0
        seen[(device, ptr)] = kind
        held.append(Held(kind, device, ptr, nbytes))
        return nbytes

    for optimizer in list(registry.optimizers):
        try:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            for p in params:
                add("parameter", p)
            for p in params:
                add("gradient", p.grad)
            state_bytes = 0
            for per_param in optimizer.state.values():
                for value in (per_param.values() if isinstance(per_param, dict) else ()):
                    state_bytes += add("optimizer_state", value)
            infos.append(OptimizerInfo(type(optimizer).__name__, sum(int(p.numel()) for p in params), state_bytes, _implementation(optimizer)))
        except Exception:  # an optimizer-like object we cannot read: leave it out
            continue
    return held, infos


def device_facts(device: str) -> DeviceFacts:
    """The math settings, and on CUDA the device's capability and the allocator's peaks."""
    precision = torch.get_float32_matmul_precision()
    allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    cudnn_tf32 = bool(torch.backends.cudnn.allow_tf32)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF") or ""
    if device != "cuda":
        return DeviceFacts(precision, allow_tf32, cudnn_tf32, -1, -1, 0, 0, 0, 0, conf)
    try:
        major, minor = torch.cuda.get_device_capability()
        stats = torch.cuda.memory_stats()
        total = int(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
    except Exception:  # a broken driver: keep the settings
        return DeviceFacts(precision, allow_tf32, cudnn_tf32, -1, -1, 0, 0, 0, 0, conf)
    return DeviceFacts(
        precision, allow_tf32, cudnn_tf32, int(major), int(minor),
        int(stats.get("reserved_bytes.all.peak", 0)), int(stats.get("allocated_bytes.all.peak", 0)),
        int(stats.get("inactive_split_bytes.all.peak", 0)), total, conf,
    )
