"""Do the recorded steps agree?  Per-step spread of the shares, and the loader's prefetch rhythm.

A mean over five steps hides steps that look nothing alike: a loader with two
workers makes every other step wait ~300 ms while the rest take 10 ms, and a
category that is 20 % of one slow step can be 20 % of the mean.  Verdicts that
only some steps support are noise, not advice.  This module reads the per-step
category times (``ProfileData.step_category_us``) as shares (``diagnosis.step_shares``)
and answers three questions:

* ``spread``: min / quartiles / max of each category's per-step share (report.json
  ``breakdown_spread``);
* ``holds``: does a category clear its bar in most steps (more than
  ``STABLE_FRACTION`` of them)?  Runs with fewer than ``MIN_STEPS`` steps are not
  tested: the mean decides;
* ``loader_pattern``: with ``num_workers > 0``, do the steps split into ones that
  waited for a batch and ones that found one prefetched?
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..results.profile_data import CATEGORIES, ProfileData

STABLE_FRACTION = 0.5  # a secondary verdict must clear its bar in more than this share of the steps
MIN_STEPS = 3  # fewer recorded steps cannot tell a stable share from noise
BIMODAL_RATIO = 3.0  # the fastest waiting step is at least this many times the slowest prefetched one
WAITING_SHARE = 0.5  # a waiting step spends at least this share of its time waiting for the batch
PREFETCHED_SHARE = 0.25  # a step that found its batch prefetched waits at most this share


def spread(per_step: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Category -> {min, q1, median, q3, max} of its per-step shares (empty without per-step data)."""
    if not per_step:
        return {}
    out = {}
    for category in CATEGORIES:
        values = sorted(s.get(category, 0.0) for s in per_step)
        q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
        out[category] = {"min": values[0], "q1": q1, "median": median, "q3": q3, "max": values[-1]}
    return out


def steps_at_bar(per_step: list[dict[str, float]], category: str, bar: float) -> int:
    """How many steps have ``category`` (compute: with the optimizer) at or above ``bar``."""
    if category == "compute":
        return sum(1 for s in per_step if s.get("compute", 0.0) + s.get("optimizer", 0.0) >= bar)
    return sum(1 for s in per_step if s.get(category, 0.0) >= bar)


def holds(per_step: list[dict[str, float]], category: str, bar: float) -> bool:
    """Whether ``category`` clears ``bar`` in most steps (always true below ``MIN_STEPS`` steps)."""
    if len(per_step) < MIN_STEPS:
        return True
    return steps_at_bar(per_step, category, bar) > STABLE_FRACTION * len(per_step)


def step_range_ms(profile: ProfileData) -> tuple[float, float]:
    durations = [s.duration_us / 1000.0 for s in profile.steps] or [0.0]
    return min(durations), max(durations)


@dataclass(frozen=True)
class LoaderPattern:
    """Steps that waited for a batch vs steps that found one prefetched (``num_workers > 0``)."""

    workers: int
    steps: int
    waited: tuple[float, ...]  # durations (ms) of the steps that waited
    prefetched: tuple[float, ...]  # durations (ms) of the steps that found a batch ready
    wait_ms: float  # mean time a waiting step spent waiting
    mean_step_ms: float

    @property
    def every_nth(self) -> bool:
        """Whether about one step in ``workers`` waits (one step of slack)."""
        return self.workers >= 2 and abs(len(self.waited) - self.steps / self.workers) <= 1

    @property
    def batch_ms(self) -> float:
        """Time one worker takes per batch: ``workers`` batches arrive per ``workers`` steps."""
        return self.workers * self.mean_step_ms

    def text(self) -> str:
        n_wait, n_ready = len(self.waited), len(self.prefetched)
        head = (
            f"Step times split in two: {n_wait} of {self.steps} steps waited for a batch "
            f"({_span(self.waited)} ms, {self.wait_ms:.0f} ms of it waiting) and {n_ready} found one prefetched "
            f"({_span(self.prefetched)} ms)"
        )
        if self.every_nth:
            why = (
                f"with {self.workers} workers, every {_ordinal(self.workers)} step waits for a batch while the others find "
                f"one prefetched: each worker needs about {self.batch_ms:.0f} ms per batch, and the {self.workers} finish "
                "about together"
            )
        else:
            why = (
                f"with {self.workers} worker{'s' if self.workers != 1 else ''}, each needing about {self.batch_ms:.0f} ms per "
                "batch, the prefetched batches run out and the next step waits for a whole batch"
            )
        return f"{head}: {why}"


def loader_pattern(profile: ProfileData) -> LoaderPattern | None:
    """The waited/prefetched split of the steps, when the run shows one (else None)."""
    workers = profile.loader_workers or 0
    if workers < 1 or len(profile.steps) < MIN_STEPS or len(profile.step_category_us) != len(profile.steps):
        return None
    steps = [(s.duration_us / 1000.0, t.get("data_loading", 0.0) / 1000.0) for s, t in zip(profile.steps, profile.step_category_us)]
    durations = sorted(d for d, _ in steps)
    ratios = [(b / a if a > 0 else float("inf"), i) for i, (a, b) in enumerate(zip(durations, durations[1:]))]
    ratio, cut = max(ratios)
    if ratio < BIMODAL_RATIO:
        return None
    threshold = durations[cut + 1]
    waited = [(d, w) for d, w in steps if d >= threshold]
    ready = [(d, w) for d, w in steps if d < threshold]
    if any(w < WAITING_SHARE * d for d, w in waited) or any(w > PREFETCHED_SHARE * d for d, w in ready):
        return None  # the slow steps are slow for another reason
    return LoaderPattern(
        workers=workers,
        steps=len(steps),
        waited=tuple(d for d, _ in waited),
        prefetched=tuple(d for d, _ in ready),
        wait_ms=sum(w for _, w in waited) / len(waited),
        mean_step_ms=profile.mean_step_us / 1000.0,
    )


def _span(values: tuple[float, ...]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}\u2013{hi:.0f}"


def _ordinal(n: int) -> str:
    if n == 2:
        return "second"
    if n == 3:
        return "third"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
