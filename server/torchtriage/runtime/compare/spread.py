"""How much a run's numbers move by themselves: the spread a difference must exceed to count.

With ``--repeat N`` (two or more recorded runs) the spread is across runs:
the range (max - min) of the runs' mean step times, and of each category's
share of their mean steps.  A single run has only its own steps: the
interquartile range of its step times, and of each category's per-step share
(report.json ``breakdown_spread``).  A difference between two runs is
measurable when it exceeds the larger of the two spreads and a floor (5% of
the step, 2 points of a share); otherwise it is "no measurable change".  A
single run's steps do not see what changes from one run to the next (other
programs, caches, clocks), so without repeats the verdict says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..results.profile_data import CATEGORIES, OK_STATUSES

REPEATS = "repeats"
STEPS = "steps"

# Below these a difference is never called measurable, whatever the spreads say.  Two runs of one
# script on one machine differ by a few percent even when each run is steady: on a quiet 2-core
# machine, two `--repeat 3` runs of the same 22 ms step differed by 1.5% while each run's range
# was 0.1-0.2 ms (other programs, caches and clocks change between runs, not within one).
MIN_STEP_CHANGE = 0.05  # of the before step
MIN_SHARE_CHANGE = 0.02  # of a category's share (2 points)


@dataclass(frozen=True)
class Spread:
    """One run's spread of the step time (ms) and of each category's share, and where it comes from."""

    source: str  # "repeats" (range across runs) | "steps" (IQR of the run's steps)
    runs: int  # recorded runs behind the numbers (1 without repeats)
    steps: int  # recorded steps of the run whose folder this is
    step_ms: float
    shares: dict[str, float]

    def describe(self) -> str:
        if self.source == REPEATS:
            return f"range over {self.runs} runs"
        return "IQR of its steps" if self.steps > 1 else "1 step, no spread"


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def _recorded_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    repeats = report.get("repeats") or {}
    return [r for r in repeats.get("runs") or [] if r.get("status") in OK_STATUSES and r.get("step_times_ms")]


def recorded_step_runs(report: dict[str, Any]) -> list[list[float]]:
    """The step times (ms) of every recorded run behind a report: each of its repeats, or its own steps."""
    runs = _recorded_runs(report)
    if len(runs) >= 2:
        return [[float(t) for t in r["step_times_ms"]] for r in runs]
    own = [float(t) for t in report.get("step_times_ms") or []]
    return [own] if own else []


def run_spread(report: dict[str, Any]) -> Spread:
    """The spread of one run's report: across its repeats when it has two or more, else across its steps."""
    steps = len(report.get("step_times_ms") or [])
    runs = _recorded_runs(report)
    if len(runs) >= 2:
        means = [float(r["step_time_ms"]) for r in runs]
        shares = {}
        for c in CATEGORIES:
            values = [float(r["breakdown"].get(c, 0.0)) for r in runs]
            shares[c] = max(values) - min(values)
        return Spread(REPEATS, len(runs), steps, max(means) - min(means), shares)
    per_step = report.get("breakdown_spread") or {}
    shares = {c: float(per_step[c]["q3"]) - float(per_step[c]["q1"]) if c in per_step else 0.0 for c in CATEGORIES}
    return Spread(STEPS, 1, steps, _iqr([float(t) for t in report.get("step_times_ms") or []]), shares)


def step_threshold(before_ms: float, sa: Spread, sb: Spread) -> float:
    """The least step-time difference (ms) that counts: the larger spread, at least 5% of the step."""
    return max(sa.step_ms, sb.step_ms, MIN_STEP_CHANGE * before_ms)


def floor_applies(before_ms: float, sa: Spread, sb: Spread) -> bool:
    """Whether the 5% floor, not a run's spread, sets the threshold."""
    return MIN_STEP_CHANGE * before_ms > max(sa.step_ms, sb.step_ms)


def share_threshold(category: str, sa: Spread, sb: Spread) -> float:
    """The least share difference of ``category`` that counts: the larger spread, at least 2 points."""
    return max(sa.shares.get(category, 0.0), sb.shares.get(category, 0.0), MIN_SHARE_CHANGE)


def measurable(delta: float, *spreads: float) -> bool:
    """Whether a difference exceeds the larger spread (a zero difference never does)."""
    return abs(delta) > max(spreads, default=0.0) and delta != 0
