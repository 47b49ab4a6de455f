"""Verdict evidence for a trace with no source lines: the ``record_function`` / module ranges the stepping
thread's time is innermost in (the analysis' ``extra["ranges"]``, ``offline/ranges.py``)."""

from __future__ import annotations

from ..results.profile_data import ProfileData


def range_evidence(profile: ProfileData, rows: int = 3) -> str:
    """The ranges most of the step's time is innermost in ("" when the run has no range table)."""
    block = profile.extra.get("ranges")
    if not isinstance(block, dict) or not block.get("ranges") or not block.get("step_ns"):
        return ""
    top = sorted(block["ranges"], key=lambda r: (-r[2], r[0]))[:rows]
    n = max(1, profile.steps_profiled)
    parts = [f"{row[0]} {row[2] / block['step_ns'] * 100:.0f}% ({row[2] / n / 1e6:.2f} ms{_mostly(row, n)})" for row in top if row[2] > 0]
    if not parts:
        return ""
    return ("with no source lines, the step's time by the innermost record_function / module range open on the stepping "
            "thread: " + ", ".join(parts))


def _mostly(row: list, n: int) -> str:
    """``; largest op aten::convolution_backward 8.12 ms``: the range's operator with most own time ("" none)."""
    work = [w for w in (row[5] if len(row) > 5 else []) if w[0] != "(other)"]
    if not work:
        return ""
    op, ns = work[0]
    return f"; largest op {op} {ns / n / 1e6:.2f} ms"
