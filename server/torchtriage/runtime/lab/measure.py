"""Step-time statistics of a configuration, and when two of them differ measurably.

The step times of every run of a configuration are pooled: median and
quartiles (inclusive method).  The *spread* is the interquartile range,
widened to take in every run's own median when the configuration ran more
than once (``--repeat``), so a difference between runs counts as noise too.
Two configurations differ measurably only when their spreads do not overlap.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

FASTER, SLOWER, SAME = "faster", "slower", "no_measurable_change"


@dataclass(frozen=True)
class StepStats:
    """Milliseconds per step over the measured steps of every run of one configuration."""

    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    low_ms: float  # the spread: [low, high]
    high_ms: float
    steps: int
    run_medians_ms: tuple[float, ...]

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def steps_per_s(self) -> float:
        return 1000.0 / self.median_ms if self.median_ms > 0 else 0.0


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3); one value is its own quartiles."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def step_stats(runs_ms: Sequence[Sequence[float]]) -> StepStats | None:
    """Statistics of the runs' step times (ms); None when no step was measured."""
    runs = [list(r) for r in runs_ms if r]
    pooled = [t for r in runs for t in r]
    if not pooled:
        return None
    q1, median, q3 = quartiles(pooled)
    medians = tuple(statistics.median(r) for r in runs)
    low, high = q1, q3
    if len(runs) > 1:
        low, high = min(low, *medians), max(high, *medians)
    return StepStats(median, q1, q3, min(pooled), max(pooled), low, high, len(pooled), medians)


def change(baseline: StepStats, other: StepStats) -> str:
    """Whether ``other`` is faster or slower than ``baseline`` beyond both spreads."""
    if other.high_ms < baseline.low_ms:
        return FASTER
    if other.low_ms > baseline.high_ms:
        return SLOWER
    return SAME
