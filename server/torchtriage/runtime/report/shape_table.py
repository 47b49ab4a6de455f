"""report.json's ``operators_by_shape``: the CPU operators grouped by name and input shapes (a trace recorded
with ``record_shapes=True``), per step.

The sweep sums each (op name, "Input Dims") group while it runs, in bounded
memory (``offline/tables.py``'s ``ShapeTable``: past a few thousand groups the
half with least self time is dropped and counted); the analysis hands the
``SHAPE_ROWS`` groups with most self time, and the sum of the rest, to the
profile's ``extra["operator_shapes"]``.  Absent for a profiled run and for a
trace without shapes.
"""

from __future__ import annotations

from typing import Any

from ..results.profile_data import ProfileData

SHAPE_ROWS = 30


def shape_sections(profile: ProfileData) -> dict[str, Any]:
    """``{"operators_by_shape": table}``, or ``{}`` when the trace recorded no shapes."""
    block = profile.extra.get("operator_shapes")
    if not isinstance(block, dict) or not block.get("groups"):
        return {}
    n = max(1, profile.steps_profiled)
    groups = block["groups"]
    self_all = sum(g[3] for g in groups) + block.get("other_self_ns", 0)

    def ms(ns: float) -> float:
        return round(ns / n / 1e6, 4)

    return {"operators_by_shape": {
        "rows": [
            {"name": name, "input_shapes": shapes, "calls_per_step": round(calls / n, 3), "self_ms_per_step": ms(self_ns),
             "total_ms_per_step": ms(total_ns), "share": round(self_ns / self_all, 4) if self_all > 0 else 0.0}
            for name, shapes, calls, self_ns, total_ns in groups
        ],
        "other_groups": block.get("other_groups", 0),
        "other_calls_per_step": round(block.get("other_calls", 0) / n, 3),
        "other_self_ms_per_step": ms(block.get("other_self_ns", 0)),
    }}
