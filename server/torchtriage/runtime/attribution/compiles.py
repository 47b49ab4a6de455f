"""agent.json's torch.compile records -> ``CompileEvent`` s and ``GraphBreakSite`` s, and each step's compile time."""

from __future__ import annotations

from typing import Any, Sequence

from ..agent.wire import Compile, GraphBreak, Step, read_records
from ..results.profile_data import CompileEvent, GraphBreakSite


def read_compiles(raw: dict[str, Any], steps: Sequence[Step]) -> tuple[list[CompileEvent], list[GraphBreakSite], list[float]]:
    """The agent's compile and graph-break records, and each recorded step's compile time (us)."""
    origin = steps[0].start_ns if steps else 0
    per_step = [0.0] * len(steps)
    events = []
    for c in read_records(raw.get("compiles", []), Compile):
        inside = 0.0
        for i, step in enumerate(steps):
            overlap = min(c.end_ns, step.end_ns) - max(c.start_ns, step.start_ns)
            if overlap > 0:
                per_step[i] += overlap / 1000.0
                inside += overlap / 1000.0
        events.append(
            CompileEvent(
                compile_id=c.compile_id, trigger=c.trigger, function=c.function, path=c.path, line=c.line,
                call_path=c.call_path, call_line=c.call_line,
                start_us=round((c.start_ns - origin) / 1000.0, 3) if origin and c.start_ns else 0.0,
                duration_us=round((c.end_ns - c.start_ns) / 1000.0, 3), recompile_reason=c.recompile_reason,
                fail_reason=c.fail_reason, in_window_us=round(inside, 3),
            )
        )
    breaks = [GraphBreakSite(b.compile_id, b.path, b.line, b.kind, b.reason) for b in read_records(raw.get("graph_breaks", []), GraphBreak)]
    return events, breaks, per_step
