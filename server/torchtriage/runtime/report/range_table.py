"""report.json's ``ranges``: the stepping thread's ``record_function`` / module ranges per name, in a report made
from a trace with no Python frames and no "Call stack" (``offline/ranges.py`` sums them during the sweep): what
names the step's time when no line can.  Absent otherwise."""

from __future__ import annotations

from typing import Any

from ..results.profile_data import ProfileData


def range_sections(profile: ProfileData) -> dict[str, Any]:
    """``{"ranges": table}``, or ``{}`` when the run has no range table."""
    block = profile.extra.get("ranges")
    if not isinstance(block, dict) or not block.get("ranges"):
        return {}
    n = max(1, profile.steps_profiled)
    step_ns = block.get("step_ns") or 0
    return {"ranges": {
        "names": block.get("names", 0),
        "rows": [
            {"name": name, "parent": parent or None, "calls_per_step": round(calls / n, 3), "ms_per_step": round(incl / n / 1e6, 4),
             "self_ms_per_step": round(own / n / 1e6, 4), "share": round(min(1.0, incl / step_ns), 4) if step_ns > 0 else 0.0,
             "top_ops": [{"name": op, "self_ms_per_step": round(ns / n / 1e6, 4)} for op, ns in (rest[0] if rest else [])]}
            for name, incl, own, calls, parent, *rest in block["ranges"]
        ],
    }}
