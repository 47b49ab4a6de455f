"""The plain sentence a comparison ends in.

"data loading 61% → 8%, step 48 → 19 ms: 2.5× faster; the TT302 fix
(train.py:23) paid off" — the category that moved most in the direction of
the step, the step time and the factor, the static findings of that category
that the second run no longer has (with the line that was edited), and the
new bottleneck.  Within the spread it says "no measurable change".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .deltas import FASTER, NONE, SLOWER
from .matching import FindingFate
from .spread import MIN_STEP_CHANGE, Spread, floor_applies

ARROW = "\u2192"


def title(category: str) -> str:
    return category.replace("_", " ")


def pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def ms(value: float) -> str:
    """Milliseconds with the digits that matter: 48, 4.8, 0.48."""
    value = abs(value)
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def factor(x: float) -> str:
    return f"{x:.2f}" if x < 1.1 else f"{x:.1f}" if x < 10 else f"{x:.0f}"


def _where(item: dict[str, Any] | None) -> str:
    return f"{Path(item['path']).name}:{item['line']}" if item else ""


def _lead(rows: list[dict[str, Any]], change: str) -> dict[str, Any] | None:
    """The measurable category that moved most in the step's direction (down when faster)."""
    wanted = "down" if change == FASTER else "up"
    moved = [r for r in rows if r["measurable"] and r["change"] == wanted]
    if change == NONE:
        moved = [r for r in rows if r["measurable"]]
    return max(moved, key=lambda r: (abs(r["delta_ms"]), abs(r["delta_share"])), default=None)


def _codes(fates: list[FindingFate]) -> str:
    labels = list(dict.fromkeys(f"{f.code} fix ({_where(f.before)})" if f.before else f.code for f in fates))
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _credited(fates: list[FindingFate], rows: list[dict[str, Any]], change: str) -> list[FindingFate]:
    """Fixed findings whose category got measurably smaller while the step got faster."""
    if change != FASTER:
        return []
    down = {r["category"] for r in rows if r["measurable"] and r["change"] == "down"}
    return [f for f in fates if f.status == "fixed" and f.category in down]


def signed_ms(value: float) -> str:
    return ("+" if value > 0 else "\u2212" if value < 0 else "") + ms(value)


def interval_text(interval: dict[str, Any]) -> str:
    """"95% interval \u221218 to \u221216 ms over 10 and 10 steps" (and the runs when there are repeats)."""
    steps, runs = interval["steps"], interval["runs"]
    over = f"{steps['before']} and {steps['after']} steps"
    if runs["before"] > 1 or runs["after"] > 1:
        over += f" of {runs['before']} and {runs['after']} runs"
    return f"{interval['confidence']:.0%} interval {signed_ms(interval['low_ms'])} to {signed_ms(interval['high_ms'])} ms over {over}"


def _within(step: dict[str, Any], spreads: tuple[Spread, Spread]) -> str:
    """Why the step's difference is not a change: its interval includes zero, or reaches under the 5% floor,
    or (reports without step times) it stayed within the larger run's spread."""
    interval = step.get("interval")
    if interval is not None:
        if interval["low_ms"] <= 0 <= interval["high_ms"] or (interval["high_ms"] < 0) != (step["delta_ms"] < 0):
            return f"the {interval_text(interval)} includes no change"
        return (f"the {interval_text(interval)} reaches within {MIN_STEP_CHANGE:.0%} of the step ({ms(step['threshold_ms'])} ms), "
                "the least a comparison of two runs calls measurable")
    if floor_applies(step["before_ms"], *spreads):
        return f"within {MIN_STEP_CHANGE:.0%} of the step ({ms(step['threshold_ms'])} ms), the least a comparison of two runs calls measurable"
    widest = spreads[0] if spreads[0].step_ms >= spreads[1].step_ms else spreads[1]
    return f"within the spread of {ms(widest.step_ms)} ms ({widest.describe()})"


def verdict(
    step: dict[str, Any],
    rows: list[dict[str, Any]],
    fates: list[FindingFate],
    bottlenecks: tuple[str, str],
    spreads: tuple[Spread, Spread],
) -> dict[str, Any]:
    """compare.json's ``verdict``: the sentence and the facts it rests on."""
    change = step["change"]
    lead = _lead(rows, change)
    credited = _credited(fates, rows, change)
    moved = f"{title(lead['category'])} {pct(lead['before_share'])} {ARROW} {pct(lead['after_share'])}" if lead else ""
    steps = f"step {ms(step['before_ms'])} {ARROW} {ms(step['after_ms'])} ms"
    if change == NONE:
        pct_change = f"{step['delta_pct']:+.1f}".replace("-", "\u2212")
        text = f"no measurable change: {steps} ({pct_change}%), {_within(step, spreads)}"
        if moved:
            text += f"; {moved}, but the step time did not move measurably"
        fixed = [f for f in fates if f.status == "fixed"]
        if fixed:
            text += f"; {_codes(fixed).replace(' fix (', ' fixed (')}, with no measurable effect on the step"
    else:
        speed = step["speedup"] if change == FASTER else 1 / step["speedup"] if step["speedup"] else 0.0
        text = (f"{moved}, " if moved else "") + f"{steps}: {factor(speed)}\u00d7 {change}"
        if step.get("interval") is not None:
            text += f" ({interval_text(step['interval'])})"
        if credited:
            text += f"; the {_codes(credited)} paid off"
        if change == SLOWER:
            new = [f for f in fates if f.status == "new" and lead is not None and f.category == lead["category"]]
            if new:
                text += "; new: " + ", ".join(f"{f.code} at {_where(f.after)}" for f in new)
    before, after = bottlenecks
    if after != before and change != NONE:
        text += f"; now {title(after)} bound" if after != "none" else "; no clear bottleneck left"
    return {
        "text": text,
        "change": change,
        "speedup": step["speedup"],
        "lead_category": lead["category"] if lead else None,
        "credited": list(dict.fromkeys(f.code for f in credited)),
        "bottleneck_before": before,
        "bottleneck_after": after,
    }
