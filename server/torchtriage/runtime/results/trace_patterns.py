"""Typed facts a trace gives the pattern rules (``torchtriage analyze``): ``ProfileData.extra["trace_patterns"]``.

``offline/pattern_block.py`` writes the block; ``diagnosis/patterns`` reads it
through ``TraceFacts.of(profile)`` (None for a profiled run, whose agent does
not look for these patterns).  Times are microseconds summed over the recorded
steps; ``path`` is "" and ``line`` 0 when the trace had no Python frames to
place a pattern on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

PATTERN_KINDS = ("created_then_moved", "indexing_loop", "single_tensor_optimizer", "zero_grad_fills", "conv_bias_before_bn",
                 "loader", "data_parallel", "ddp")


@dataclass
class PatternHit:
    """One pattern at one user line: its host time and the GPU time of the work it launched."""

    kind: str  # one of PATTERN_KINDS
    path: str
    line: int
    function: str
    us: float
    gpu_us: float
    count: int  # occurrences (loops: iterations; optimizers: per-tensor ops; fills: tensors)
    steps: int  # recorded steps it occurred in
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def placed(self) -> bool:
        return bool(self.path) and self.line > 0


@dataclass
class TraceFacts:
    """The patterns found in a trace, and what the Overview rules need beyond ``ProfileData``."""

    patterns: list[PatternHit]
    gpu_devices: int = 0  # GPUs with activity in the trace
    backend: str = ""  # distributedInfo.backend ("" when the trace has none)
    backends_seen: list[str] = field(default_factory=list)  # collective libraries named by ops (nccl, gloo)
    capability: Optional[tuple[int, int]] = None
    with_stack: bool = False
    record_shapes: bool = False

    def of_kind(self, kind: str) -> list[PatternHit]:
        return [p for p in self.patterns if p.kind == kind]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TraceFacts":
        cap = data.get("capability")
        return cls(
            patterns=[PatternHit(**p) for p in data.get("patterns", []) if isinstance(p, dict)],
            gpu_devices=int(data.get("gpu_devices") or 0),
            backend=str(data.get("backend") or ""),
            backends_seen=[str(b) for b in data.get("backends_seen") or []],
            capability=(int(cap[0]), int(cap[1])) if isinstance(cap, (list, tuple)) and len(cap) == 2 and int(cap[0]) >= 0 else None,
            with_stack=bool(data.get("with_stack")),
            record_shapes=bool(data.get("record_shapes")),
        )

    @classmethod
    def of(cls, profile: Any) -> Optional["TraceFacts"]:
        """The facts of an analysed trace's profile (None for a profiled run or an older profile)."""
        data = (getattr(profile, "extra", None) or {}).get("trace_patterns")
        return cls.from_json(data) if isinstance(data, dict) else None
