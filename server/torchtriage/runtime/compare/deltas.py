"""Before/after numbers of two reports, each with whether it moved beyond the runs' spread.

Every function returns the compare.json section it names (see
COMPARE_SCHEMA.md): the step time, each category's share and ms, the
matched hot lines, the op and kernel counts, and peak memory.
"""

from __future__ import annotations

from typing import Any

from ..results.profile_data import CATEGORIES
from .interval import Interval, Side as StepSide, difference_interval
from .matching import LineMatch, Side
from .spread import MIN_STEP_CHANGE, Spread, measurable, recorded_step_runs, share_threshold, step_threshold

FASTER, SLOWER, NONE = "faster", "slower", "none"


def _r(x: float, digits: int = 4) -> float:
    return round(float(x), digits)


def step_interval(a: dict[str, Any], b: dict[str, Any]) -> Interval | None:
    """The 95 % interval of (after - before) mean step from every recorded step of every run (None without steps)."""
    return difference_interval(StepSide.of(recorded_step_runs(a)), StepSide.of(recorded_step_runs(b)))


def _interval_json(interval: Interval | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    return {
        "method": "block bootstrap",
        "confidence": interval.confidence,
        "low_ms": _r(interval.low_ms),
        "high_ms": _r(interval.high_ms),
        "steps": {"before": interval.steps[0], "after": interval.steps[1]},
        "runs": {"before": interval.runs[0], "after": interval.runs[1]},
        "block_steps": {"before": interval.blocks[0], "after": interval.blocks[1]},
    }


def step_time(a: dict[str, Any], b: dict[str, Any], sa: Spread, sb: Spread) -> dict[str, Any]:
    """Mean step before and after, the change, its interval, and whether it is measurable.

    With an interval (both sides have recorded steps): measurable when the whole interval lies beyond the
    floor (5 % of the before step) on the side of the change.  Reports without step
    times fall back to the larger spread of the two runs, at least the floor."""
    before, after = float(a["step_time_ms"]), float(b["step_time_ms"])
    delta = after - before
    interval = step_interval(a, b)
    if interval is not None:
        threshold = MIN_STEP_CHANGE * before
        beyond = interval.high_ms < -threshold if delta < 0 else interval.low_ms > threshold  # the whole interval
        moved = beyond and before > 0 and after > 0
    else:
        threshold = step_threshold(before, sa, sb)
        moved = measurable(delta, threshold) and before > 0 and after > 0
    return {
        "before_ms": _r(before),
        "after_ms": _r(after),
        "delta_ms": _r(delta),
        "delta_pct": _r(100 * delta / before, 2) if before > 0 else 0.0,
        "speedup": _r(before / after, 3) if after > 0 else 0.0,
        "before_spread_ms": _r(sa.step_ms),
        "after_spread_ms": _r(sb.step_ms),
        "threshold_ms": _r(threshold),
        "interval": _interval_json(interval),
        "measurable": moved,
        "change": (FASTER if delta < 0 else SLOWER) if moved else NONE,
    }


def categories(a: dict[str, Any], b: dict[str, Any], sa: Spread, sb: Spread) -> list[dict[str, Any]]:
    """Each category's share and ms per step before and after (all eight, in report order)."""
    rows = []
    for c in CATEGORIES:
        before, after = float(a["breakdown"].get(c, 0.0)), float(b["breakdown"].get(c, 0.0))
        before_ms, after_ms = float(a["breakdown_ms"].get(c, 0.0)), float(b["breakdown_ms"].get(c, 0.0))
        spread = share_threshold(c, sa, sb)
        moved = measurable(after - before, spread)
        rows.append({
            "category": c,
            "before_share": _r(before, 5),
            "after_share": _r(after, 5),
            "delta_share": _r(after - before, 5),
            "before_ms": _r(before_ms),
            "after_ms": _r(after_ms),
            "delta_ms": _r(after_ms - before_ms),
            "spread_share": _r(spread, 5),
            "measurable": moved,
            "change": ("down" if after < before else "up") if moved else NONE,
        })
    return rows


def _side(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    hot = side.hot or {}
    return {
        "path": side.path,
        "line": side.line,
        "source": side.source,
        "hot": side.hot is not None,
        "function": hot.get("function", ""),
        "ms_per_step": _r(hot.get("self_ms_per_step", 0.0)),
        "share": _r(hot.get("share", 0.0), 5),
        "category": hot.get("category"),
        "static_codes": list(hot.get("static_codes") or []),
    }


def lines(matches: list[LineMatch], threshold_ms: float) -> list[dict[str, Any]]:
    """The matched hot lines with their change in ms per step (measurable beyond the step's threshold), largest first."""
    rows = []
    for m in matches:
        before, after = _side(m.before), _side(m.after)
        ms_before = before["ms_per_step"] if before else 0.0
        ms_after = after["ms_per_step"] if after else 0.0
        delta = ms_after - ms_before
        rows.append({
            "match": m.match,
            "before": before,
            "after": after,
            "delta_ms": _r(delta),
            "measurable": measurable(delta, threshold_ms),
        })
    rows.sort(key=lambda r: (-abs(r["delta_ms"]), -(r["after"] or r["before"] or {}).get("ms_per_step", 0.0)))
    return rows


def _pair(before: float, after: float, digits: int = 2) -> dict[str, float]:
    return {"before": _r(before, digits), "after": _r(after, digits), "delta": _r(after - before, digits)}


def counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Top-level ops and GPU kernels per step."""
    return {k: _pair(float(a.get(k) or 0.0), float(b.get(k) or 0.0)) for k in ("ops_per_step", "kernels_per_step")}


def memory(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Peak live allocated memory (bytes)."""
    before, after = int(a["memory"].get("peak_bytes") or 0), int(b["memory"].get("peak_bytes") or 0)
    return {"peak_bytes": {"before": before, "after": after, "delta": after - before}}
