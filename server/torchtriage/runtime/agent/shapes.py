"""Matmul and convolution signatures met in the event tree: the shapes Tensor Cores care about.

``Collector`` calls ``ShapeTable.enter`` for each op named in ``SHAPE_OPS``
(the leaf matmuls and the convolutions, forward and backward) and hands the
returned index down to the op's children, so a kernel launched anywhere
under it adds its device time there.  The operands' sizes and dtype come from
the profiler's ``record_shapes`` (``extra_fields.inputs``), read only for
these few ops.  ``record_shapes`` is on for CUDA runs only by default
(``wants_shapes``): the findings that use the shapes are about Tensor Cores,
and recording them costs every op a few microseconds (a step of 300 tiny
layers went from 130 to 145 ms under the profiler on this project's CPU).
Standard library and torch only: this runs in the agent.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .wire import ShapeStat

# op name -> positions of the two inputs that define the math: (A, B) of A @ B, (input, weight) of a convolution
SHAPE_OPS: Dict[str, Tuple[int, int]] = {
    "aten::mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::convolution": (0, 1),
    "aten::convolution_backward": (1, 2),
}


def wants_shapes(config: Dict[str, Any], device: str) -> bool:
    """Whether to record operand shapes: the ``record_shapes`` setting, "auto" (the default) on CUDA only."""
    value = config.get("record_shapes", "auto")
    return device == "cuda" if value in (None, "auto") else bool(value)


def _sizes(value: Any) -> List[int]:
    sizes = getattr(value, "sizes", None)
    return [int(s) for s in sizes] if sizes is not None else []


def _dtype(value: Any) -> str:
    dtype = getattr(value, "dtype", None)
    return str(dtype).replace("torch.", "") if dtype is not None else ""


class ShapeTable:
    """Per (op, dtype, dims, caller chain): calls, host ns, device ns, and the root of the longest call."""

    def __init__(self) -> None:
        self.keys: Dict[Tuple[str, str, str, int], int] = {}
        self.stats: List[List[Any]] = []  # [name, dtype, dims, calls, cpu_ns, gpu_ns, chain, root, longest ns]

    def enter(self, name: str, fields: Any, chain: int, root: int, ns: int) -> int:
        """Record one call of a shape op; returns the index its kernels report to (-1: not recorded)."""
        positions = SHAPE_OPS.get(name)
        if positions is None:
            return -1
        try:
            inputs = list(fields.inputs)
        except Exception:  # no record_shapes, or an input the profiler cannot describe
            inputs = []
        operands = [inputs[i] for i in positions if i < len(inputs)]
        dims = ",".join("x".join(str(s) for s in _sizes(o)) for o in operands) if len(operands) == 2 else ""
        dtype = _dtype(operands[0]) if operands else ""
        key = (name, dtype, dims, chain)
        index = self.keys.get(key)
        if index is None:
            index = self.keys[key] = len(self.stats)
            self.stats.append([name, dtype, dims, 0, 0, 0, chain, root, -1])
        entry = self.stats[index]
        entry[3] += 1
        entry[4] += ns
        if ns > entry[8]:
            entry[7], entry[8] = root, ns
        return index

    def kernel(self, index: int, ns: int) -> None:
        """Add a kernel's device time to the shape op that launched it."""
        if 0 <= index < len(self.stats):
            self.stats[index][5] += ns

    def records(self) -> List[ShapeStat]:
        out = [ShapeStat(*entry[:8]) for entry in self.stats]
        out.sort(key=lambda r: (-(r.gpu_ns or r.cpu_ns), r.name, r.dims))
        return out
