"""Stragglers: ranks that persistently need more time per step than the others.

Under DDP every rank's step takes as long as the slowest rank's (the
all-reduce at the end of backward waits for everyone), so step times alone
cannot name the slow rank: the fast ranks spend the difference waiting in the
collective.  What a rank needs by itself is its *busy time*: the step time
minus the time its stepping thread waited for communication (and minus the
profiler's own overhead).

The rule (documented in README "Multi-process"):

* steps are matched across ranks by their ``ProfilerStep`` number;
* in each matched step a rank is *slower* when its busy time exceeds the
  median busy time of the **other** ranks by more than the noise,
  ``max(NOISE_MS, NOISE_SHARE x that step's median step time)``;
* a rank is a straggler when it is slower in at least ``PERSISTENT`` (2/3) of
  the matched steps (at least ``MIN_STEPS`` of them, and at least two ranks);
* its gap is the median over the matched steps of that excess, and the
  category that explains it is the one whose per-step time exceeds the other
  ranks' median by the most (data loading, host sync, compute, ...).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from ..results.profile_data import CATEGORIES, ProfileData

PERSISTENT = 2 / 3  # share of the matched steps in which a straggler is slower
NOISE_MS = 1.0  # a busy-time gap below this is noise whatever the step time
NOISE_SHARE = 0.10  # ... and below this share of the step (ranks sharing cores differ by several % by themselves)
MIN_STEPS = 2
WAIT = "communication"
EXPLAINING = tuple(c for c in CATEGORIES if c != WAIT)  # categories that can explain a gap (idle: unaccounted time)
TITLES = {"data_loading": "data loading", "host_sync": "host-device syncs", "python_overhead": "Python overhead",
          "launch_overhead": "launch overhead", "idle": "unaccounted time"}


@dataclass(frozen=True)
class RankSteps:
    """One rank's recorded steps: step number -> (step ms, category ms)."""

    rank: int
    steps: dict[int, tuple[float, dict[str, float]]] = field(default_factory=dict)

    @classmethod
    def of(cls, rank: int, profile: ProfileData) -> "RankSteps":
        per_step = profile.step_category_us if len(profile.step_category_us) == len(profile.steps) else [{} for _ in profile.steps]
        return cls(rank, {
            s.index: (s.duration_us / 1000.0, {c: float(v) / 1000.0 for c, v in times.items()})
            for s, times in zip(profile.steps, per_step)
        })

    def busy_ms(self, step: int) -> float:
        """The step's time in every category but the wait for communication (idle included; the
        profiler's own overhead, which differs between ranks sharing cores, left out)."""
        _, times = self.steps[step]
        return sum(v for c, v in times.items() if c != WAIT)


@dataclass(frozen=True)
class Straggler:
    rank: int
    gap_ms: float  # median over matched steps: busy time minus the other ranks' median busy time
    gap_share: float  # gap / median step time
    slower_steps: int
    steps: int
    category: str  # the category with the largest excess
    category_gap_ms: float

    def text(self) -> str:
        title = TITLES.get(self.category, self.category)
        return (
            f"rank {self.rank} is a straggler: it needs {self.gap_ms:.1f} ms more per step than the other ranks' median "
            f"({self.gap_share * 100:.0f}% of the step; slower in {self.slower_steps} of {self.steps} steps), "
            f"mostly {title} (+{self.category_gap_ms:.1f} ms/step); the other ranks wait for it in their collectives"
        )


@dataclass(frozen=True)
class StragglerResult:
    stragglers: list[Straggler]
    matched_steps: int
    busy_ms: dict[int, float]  # rank -> median busy time per matched step
    note: str = ""  # why nothing could be called, when that is the case


def find_stragglers(ranks: list[RankSteps]) -> StragglerResult:
    """Apply the rule in the module docstring."""
    ranks = [r for r in ranks if r.steps]
    if len(ranks) < 2:
        return StragglerResult([], 0, {r.rank: _median([r.busy_ms(i) for i in r.steps]) for r in ranks},
                               "straggler detection needs the recorded steps of at least 2 ranks")
    matched = sorted(set.intersection(*(set(r.steps) for r in ranks)))
    busy = {r.rank: _median([r.busy_ms(i) for i in matched]) for r in ranks}
    if len(matched) < MIN_STEPS:
        return StragglerResult([], len(matched), busy, f"only {len(matched)} step(s) were recorded by every rank: too few to call a straggler")
    found = []
    needed = math.ceil(PERSISTENT * len(matched) - 1e-9)
    for rank in ranks:
        others = [r for r in ranks if r is not rank]
        excess, slower = [], 0
        for i in matched:
            median_step = _median([r.steps[i][0] for r in ranks])
            gap = rank.busy_ms(i) - _median([r.busy_ms(i) for r in others])
            excess.append(gap)
            if gap > max(NOISE_MS, NOISE_SHARE * median_step):
                slower += 1
        if slower < needed:
            continue
        category, category_gap = _explaining(rank, others, matched)
        step_ms = _median([rank.steps[i][0] for i in matched])
        gap_ms = _median(excess)
        found.append(Straggler(rank.rank, round(gap_ms, 3), round(gap_ms / step_ms, 4) if step_ms > 0 else 0.0, slower,
                               len(matched), category, round(category_gap, 3)))
    found.sort(key=lambda s: -s.gap_ms)
    return StragglerResult(found, len(matched), busy)


def _explaining(rank: RankSteps, others: list[RankSteps], matched: list[int]) -> tuple[str, float]:
    """The category whose time per step exceeds the other ranks' median by the most (median over steps)."""
    gaps = {}
    for category in EXPLAINING:
        gaps[category] = _median([
            rank.steps[i][1].get(category, 0.0) - _median([r.steps[i][1].get(category, 0.0) for r in others]) for i in matched
        ])
    category = max(gaps, key=lambda c: (gaps[c], c != "idle"))
    return category, gaps[category]


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0
