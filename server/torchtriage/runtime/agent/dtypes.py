"""Dtype churn seen by the collector's walk: ops mixing float dtypes, and casts between them.

With ``record_shapes`` the profiler keeps each op's inputs (dtype, sizes,
storage and allocation ids).  The walk hands every op here (``op``) and every
allocation (``allocation``); this records

* "mixed": a top-level op whose floating inputs (0-dim tensors excluded: they
  do not promote) mix a 16-bit float with float32/64, so the result is promoted
  to the wider type: the "adding a float32 tensor to a bfloat16 tensor" cast;
* "cast": an ``aten::copy_`` from one float dtype to another (what ``.to()``,
  ``.float()`` and type promotion run), with the bytes it reads and writes,
  inside the top-level op that caused it.

Where the wider operand of a mixed op was made: an allocation inside the
recorded steps (same allocation id), else the line that registered it as a
module buffer or parameter (global registration hooks, installed before the
script runs).

``record_shapes`` costs every op a few microseconds (a 300-tiny-layer step
+18 % under the profiler), and churn between 16-bit and 32-bit floats needs a
16-bit float somewhere: ``wants_shapes`` turns True once an optimizer steps
bfloat16/float16 parameters (a global optimizer step hook, registered before
the step detector's so that it decides before the profiler warms up).
Standard library and torch only.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from .wire import DtypeEvent

TensorMetadata = getattr(torch._C._profiler, "_TensorMetadata", None)
NARROW = {"torch.float16": 2, "torch.bfloat16": 2}
WIDE = {"torch.float32": 4, "torch.float64": 8}
FLOAT_BYTES = {**NARROW, **WIDE}
CAST_OPS = ("aten::to", "aten::_to_copy", "aten::copy_")
SKIPPED_CONTEXTS = ("profiler", "compile", "optimizer", "data_loading")  # intended casts, or not the step's work
Key = Tuple[int, int, int, str, str, str, int, int, str, int, str]


def _short(dtype: str) -> str:
    return dtype[len("torch."):] if dtype.startswith("torch.") else dtype


class DtypeRecorder:
    """Collects ``DtypeEvent`` records during one walk of the event tree."""

    def __init__(self, is_user: Callable[[str], bool], absolute: Callable[[str], str]) -> None:
        self.is_user = is_user
        self.absolute = absolute
        self.events: Dict[Key, List[int]] = {}  # key -> [count, bytes, ns]
        self.allocations: Dict[int, Tuple[int, int]] = {}  # allocation id -> (chain id, root)
        self.registered: Dict[int, Tuple[str, int, str]] = {}  # storage data pointer -> (path, line, name) of its registration
        self._pending: List[Tuple[Key, int]] = []  # mixed events whose origin is an allocation id, resolved at the end
        self._top = ""  # the current top-level op (the walk is depth-first)
        self._handles: List[Any] = []
        self.wants_shapes = False  # an optimizer steps 16-bit float parameters: record op inputs
        self._checked: Dict[int, bool] = {}  # optimizers looked at

    # -- module registrations (before the script runs) ---------------------
    def install(self) -> None:
        """Global buffer / parameter registration hooks: remember where float tensors were registered."""
        try:
            from torch.nn.modules import module as nn_module

            self._handles.append(nn_module.register_module_buffer_registration_hook(self._registered))
            self._handles.append(nn_module.register_module_parameter_registration_hook(self._registered))
        except (ImportError, AttributeError):  # older torch: origins from allocations only
            pass
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._optimizer_stepped))

    def _optimizer_stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Look once at each optimizer's parameters: any bfloat16/float16 one means churn is possible."""
        if self.wants_shapes or id(optimizer) in self._checked:
            return
        self._checked[id(optimizer)] = True
        try:
            self.wants_shapes = any(str(p.dtype) in NARROW for group in optimizer.param_groups for p in group["params"])
        except Exception:  # an optimizer of an unusual shape: leave the setting as it is
            pass

    def uninstall(self) -> None:
        """Remove the hooks (never from inside an optimizer step: torch iterates over its hook dict there)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _registered(self, module: Any, name: str, tensor: Any) -> None:
        try:
            if tensor is None or str(tensor.dtype) not in FLOAT_BYTES:
                return None
            frame = sys._getframe(1)
            while frame is not None and not self.is_user(frame.f_code.co_filename):
                frame = frame.f_back
            if frame is not None:
                self.registered[tensor.untyped_storage().data_ptr()] = (self.absolute(frame.f_code.co_filename), frame.f_lineno, str(name))
        except Exception:  # never break the user's model construction
            pass
        return None

    # -- the walk ------------------------------------------------------------
    def allocation(self, fields: Any, chain: int, root: int) -> None:
        if fields.alloc_size > 0:
            self.allocations[fields.allocation_id] = (chain, root)

    def op(self, fields: Any, name: str, in_op: bool, ctx: str, step: int, duration: int,
           chain: Callable[[], int], root: int) -> None:
        """One op event; ``chain()`` gives its chain id (made only when something is recorded)."""
        if not in_op:
            self._top = name
        if step < 0 or ctx in SKIPPED_CONTEXTS or (in_op and name != "aten::copy_"):
            return
        tensors = [i for i in fields.inputs if isinstance(i, TensorMetadata)] if TensorMetadata is not None else []
        if name == "aten::copy_":
            self._cast(tensors, step, duration, chain, root)
        elif not in_op and name not in CAST_OPS:
            self._mixed(tensors, name, step, chain, root)

    def _cast(self, tensors: List[Any], step: int, duration: int, chain: Callable[[], int], root: int) -> None:
        if len(tensors) < 2:
            return
        dst, src = str(tensors[0].dtype), str(tensors[1].dtype)
        if dst == src or dst not in FLOAT_BYTES or src not in FLOAT_BYTES:
            return
        numel = 1
        for size in tensors[1].sizes:
            numel *= int(size)
        if numel <= 1:
            return  # a scalar's cast (a Python number made a tensor) moves nothing worth naming
        key = (step, chain(), root, "cast", self._top or "aten::copy_", f"{_short(src)}->{_short(dst)}", -1, -1, "", 0, "")
        self._add(key, numel * (FLOAT_BYTES[src] + FLOAT_BYTES[dst]), duration)

    def _mixed(self, tensors: List[Any], name: str, step: int, chain: Callable[[], int], root: int) -> None:
        floats = [t for t in tensors if str(t.dtype) in FLOAT_BYTES and len(t.sizes) > 0]
        if not any(str(t.dtype) in NARROW for t in floats) or not any(str(t.dtype) in WIDE for t in floats):
            return
        dtypes = " ".join(f"{_short(str(t.dtype))}{list(t.sizes)}" for t in floats)
        wide = next(t for t in floats if str(t.dtype) in WIDE)
        path, line, registered = self.registered.get(int(wide.storage_data_ptr), ("", 0, ""))
        key = (step, chain(), root, "mixed", name, dtypes, -1, -1, path, line, registered)
        self._add(key, 0, 0)
        if not path:
            self._pending.append((key, int(wide.allocation_id)))

    def _add(self, key: Key, size: int, ns: int) -> None:
        entry = self.events.get(key)
        if entry is None:
            entry = self.events[key] = [0, 0, 0]
        entry[0] += 1
        entry[1] += size
        entry[2] += ns

    # -- result --------------------------------------------------------------
    def records(self, kept_steps: Optional[int] = None) -> List[DtypeEvent]:
        """The events, mixed ones with their origin where it is known; steps from ``kept_steps`` on dropped."""
        origins = {key: self.allocations.get(allocation) for key, allocation in self._pending}
        out = []
        for key, (count, size, ns) in self.events.items():
            step, chain, root, kind, op, dtypes, _, _, path, line, registered = key
            if kept_steps is not None and step >= kept_steps:
                continue
            origin = origins.get(key) or (-1, -1)
            out.append(DtypeEvent(step, chain, root, kind, op, dtypes, count, size, ns, origin[0], origin[1], path, line, registered))
        return out
