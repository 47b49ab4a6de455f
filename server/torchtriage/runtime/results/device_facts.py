"""Typed facts about the device's work in one run: matmul shapes, math settings, memory at the peak, GPU idle gaps.

Part of ``ProfileData`` (``model``): attribution fills them from agent.json's
``shapes``, ``device_facts``, ``held``/``optimizers``/``allocs`` and ``gaps``
records; ``tensor_cores``, ``memory_shape`` and ``idle_gaps`` turn them into
findings, evidence and report sections.  Times are microseconds summed over
the recorded steps; sizes are bytes; paths absolute, lines 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

MEMORY_COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations", "other")
Chain = list[tuple[str, int, str]]  # (path, line, function) from outermost to innermost


class Attributed(Protocol):
    """What the device analyses need of ``attribution.Attribution`` (which imports them)."""

    allocs: list[Any]  # wire.Alloc records
    lines: Any  # the per-line totals: ``lines.self_us[(path, line, category, device)]``

    def resolve(self, chain_id: int, root: int, self_us: float = 0.0) -> tuple[list[tuple[Chain, float]], bool]: ...


@dataclass
class ShapeCost:
    """One matmul / convolution signature at one user line over the recorded steps."""

    op: str  # aten::mm, aten::addmm, aten::bmm, aten::baddbmm, aten::convolution, aten::convolution_backward
    dtype: str  # float32, bfloat16, float16 ...
    dims: list[list[int]]  # the two operands' sizes: A and B of A @ B, or a convolution's input and weight
    calls: int
    cpu_us: float  # host time of the op calls
    gpu_us: float  # device time of the kernels they launched (0 on CPU runs)
    path: str = ""
    line: int = 0
    function: str = ""


@dataclass
class DeviceFacts:
    """The math settings and allocator figures the agent read when the window ended."""

    float32_matmul_precision: str = "highest"
    allow_tf32: bool = False
    cudnn_allow_tf32: bool = True
    capability: tuple[int, int] | None = None  # (major, minor) of the GPU; None on CPU
    reserved_peak_bytes: int = 0
    allocated_peak_bytes: int = 0
    inactive_split_peak_bytes: int = 0
    total_bytes: int = 0
    alloc_conf: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "DeviceFacts":
        data = dict(data)
        if data.get("capability") is not None:
            data["capability"] = tuple(data["capability"])
        return cls(**data)


@dataclass
class ActivationLine:
    """A line whose allocations made in the step were still live at the peak."""

    path: str
    line: int
    function: str
    bytes: int


@dataclass
class OptimizerSummary:
    name: str
    params: int  # parameter elements it updates
    state_bytes: int
    implementation: str  # fused | foreach | for-loop | default


@dataclass
class MemoryShape:
    """Where the live memory of the recorded window's peak goes."""

    device: str
    peak_bytes: int  # live allocated bytes at the peak instant
    peak_step: int  # position of the step it happened in
    components: dict[str, int]  # MEMORY_COMPONENTS -> bytes, summing to peak_bytes
    activation_lines: list[ActivationLine] = field(default_factory=list)
    optimizers: list[OptimizerSummary] = field(default_factory=list)
    step_temporaries: int = 0  # part of "other": made by the optimizer's step() and live at the peak

    @property
    def dominant(self) -> str:
        """The largest part, the optimizer's step temporaries counted with its state (see ``part_bytes``)."""
        return max(MEMORY_COMPONENTS, key=self.part_bytes)

    def part_bytes(self, component: str) -> int:
        """A component's bytes as a part to shrink: the optimizer step's temporaries (a foreach update's tensor
        lists, gone with ``fused=True``) belong to the optimizer, not to ``other``."""
        moved = self.step_temporaries if component == "optimizer_state" else -self.step_temporaries if component == "other" else 0
        return max(0, self.components.get(component, 0) + moved)

    def share(self, component: str) -> float:
        return self.components.get(component, 0) / self.peak_bytes if self.peak_bytes > 0 else 0.0

    def part_share(self, component: str) -> float:
        return self.part_bytes(component) / self.peak_bytes if self.peak_bytes > 0 else 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "MemoryShape":
        data = dict(data)
        data["activation_lines"] = [ActivationLine(**x) for x in data.get("activation_lines", [])]
        data["optimizers"] = [OptimizerSummary(**x) for x in data.get("optimizers", [])]
        return cls(**data)


@dataclass
class GpuGap:
    """One of the largest idle spans on the GPU timeline and the main thread's frame during it."""

    step: int  # position of the recorded step
    start_us: float  # from the first recorded step's start
    duration_us: float
    path: str  # the user line the main thread was on ("" when no probe reached user code)
    line: int
    function: str
    exact: bool  # False: only the function was known (the line comes from frame samples, or is its def line)
    cpu: str  # the innermost event on the main thread (an op or a Python function)
    probes: int  # probes of the gap that landed on this frame
    next_kernel: str


def facts_from_wire(raw: dict[str, Any]) -> DeviceFacts | None:
    """agent.json's one ``device_facts`` record (None when the agent wrote none)."""
    from ..agent.wire import DeviceFacts as FactsRecord, read_records

    records = read_records(raw.get("device_facts", []), FactsRecord)
    if not records:
        return None
    r = records[0]
    return DeviceFacts(
        r.float32_matmul_precision, r.allow_tf32, r.cudnn_allow_tf32,
        (r.capability_major, r.capability_minor) if r.capability_major >= 0 else None,
        r.reserved_peak_bytes, r.allocated_peak_bytes, r.inactive_split_peak_bytes, r.total_bytes, r.alloc_conf,
    )
