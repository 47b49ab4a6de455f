"""The uncertainty of a step-time difference: a block bootstrap over runs and steps.

Per-step dispersion is not the uncertainty of a mean, and the steps of one run
are not independent draws: with ``num_workers=2`` every other step waits for a
batch (6, 168, 6, 168 ms ...), and a gradient-accumulation step is slow once in
N.  So the difference of two mean step times gets its interval from the
structure of the steps, not from their spread:

* **Blocks.**  Each run's steps are cut into blocks of consecutive steps
  (``agent/step_stats.block_length``, which the recording window uses too): the
  rhythm of the steps when they have one (a whole worker cycle or accumulation
  period), else about ``n**(1/3)`` steps when neighbouring steps are correlated,
  else single steps.  A block holds a whole cycle, so block means are close to
  independent.
* **Runs.**  With ``--repeat`` every recorded run of a side counts: the bootstrap
  draws runs with replacement (run-to-run noise), then circular blocks within
  each drawn run (within-run noise).  A side of one run has no run-to-run noise to
  draw from, which is what the floor below stands in for.
* **The interval.**  ``REPLICATES`` replicates of (mean after - mean before), each
  side resampled independently with a fixed seed (the same reports give the same
  interval), and the 2.5 and 97.5 percentiles: a 95 % interval of the difference.
* **The call.**  ``faster`` / ``slower`` only when the whole interval lies beyond
  the floor (``spread.MIN_STEP_CHANGE`` of the before step) on one side: two
  steady runs of one script differ by a few percent (other programs, caches,
  clocks), more than either run's own steps show, so a difference must clear
  the floor with its uncertainty, not only on average.

This is what pyperf's ``compare_to`` (a significance test, "not significant") and
criterion.rs (a bootstrap interval and a noise threshold) do for benchmarks,
with the step structure they cannot see: the rhythm of a loader or of gradient
accumulation sets the blocks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from ..agent.step_stats import block_length

CONFIDENCE = 0.95
REPLICATES = 2000
SEED = 20261126  # fixed: the same two reports always give the same interval
MIN_STEPS_FOR_INTERVAL = 2  # a side with fewer steps in all has no interval

Run = Sequence[float]  # one run's step times (ms), in order


@dataclass(frozen=True)
class Side:
    """The step times of one side of a comparison: one run, or every recorded run of a ``--repeat`` series."""

    runs: tuple[tuple[float, ...], ...]

    @classmethod
    def of(cls, runs: Sequence[Run]) -> "Side":
        return cls(tuple(tuple(float(t) for t in run) for run in runs if len(run)))

    @property
    def steps(self) -> int:
        return sum(len(r) for r in self.runs)

    @property
    def block_length(self) -> int:
        """The block length of this side: the longest any of its runs needs."""
        return max((block_length(r) for r in self.runs), default=1)


@dataclass(frozen=True)
class Interval:
    """A confidence interval of (after - before) mean step time, in ms, and what it rests on."""

    low_ms: float
    high_ms: float
    confidence: float
    steps: tuple[int, int]  # steps behind each side (before, after)
    runs: tuple[int, int]
    blocks: tuple[int, int]  # block length of each side (steps)


def _resampled_mean(side: Side, length: int, rng: random.Random) -> float:
    """One bootstrap replicate of the side's mean step: runs drawn with replacement, then circular blocks."""
    runs = side.runs if len(side.runs) == 1 else [side.runs[rng.randrange(len(side.runs))] for _ in side.runs]
    total, count = 0.0, 0
    for run in runs:
        n = len(run)
        block = min(length, n)
        for _ in range(math.ceil(n / block)):
            start = rng.randrange(n)
            for i in range(block):
                total += run[(start + i) % n]
            count += block
    return total / count


def difference_interval(before: Side, after: Side, confidence: float = CONFIDENCE,
                        replicates: int = REPLICATES) -> Interval | None:
    """The bootstrap interval of ``after.mean - before.mean`` (None when a side has too few steps)."""
    if before.steps < MIN_STEPS_FOR_INTERVAL or after.steps < MIN_STEPS_FOR_INTERVAL:
        return None
    rng = random.Random(SEED)
    la, lb = before.block_length, after.block_length
    diffs = sorted(_resampled_mean(after, lb, rng) - _resampled_mean(before, la, rng) for _ in range(replicates))
    tail = (1 - confidence) / 2
    low = diffs[int(math.floor(tail * (replicates - 1)))]
    high = diffs[int(math.ceil((1 - tail) * (replicates - 1)))]
    return Interval(low, high, confidence, (before.steps, after.steps), (len(before.runs), len(after.runs)), (la, lb))
