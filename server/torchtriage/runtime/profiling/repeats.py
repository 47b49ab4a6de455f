"""``torchtriage profile --repeat N``: run the script N times, keep the median run, record every run.

One run's mean step time moves with whatever else the machine is doing; N
runs give a spread that ``torchtriage compare`` uses to call a difference
"no measurable change".  Each run goes into a hidden staging folder beside
the run folder (``.<name>.repeat-<i>``); afterwards the run with the median
mean step time (the lower median for an even N) becomes the run folder, so
its trace, profile.json and report describe a typical run, and the others
are deleted.  report.json's ``repeats`` keeps every run's step times and
breakdown.  A run that fails stops the series: its folder is kept and its
report says what happened.
"""

from __future__ import annotations

import os
import shutil
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

from ..diagnosis.bottleneck import diagnose
from ..results.profile_data import CATEGORIES, OK_STATUSES, ProfileData
from .finish import ProfiledRun, StageCallback, profile_from_outcome, write_outputs
from .runner import OUTPUT_LOG, RunOptions, RunOutcome

KEPT_RULE = "median"

RunOne = Callable[[RunOptions, int], RunOutcome]  # (options of run i, i) -> what the runner saw


@dataclass(frozen=True)
class RepeatRun:
    """One of the N runs: its status, mean step time, each step, and the breakdown of its mean step."""

    run: int  # 1-based, in the order they ran
    status: str
    step_time_ms: float
    step_times_ms: tuple[float, ...]
    breakdown: dict[str, float]

    @property
    def recorded(self) -> bool:
        return self.status in OK_STATUSES and bool(self.step_times_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "status": self.status,
            "step_time_ms": round(self.step_time_ms, 4),
            "step_times_ms": [round(t, 4) for t in self.step_times_ms],
            "breakdown": {c: round(self.breakdown.get(c, 0.0), 5) for c in CATEGORIES},
        }


@dataclass(frozen=True)
class Repeats:
    """Every run of a ``--repeat N`` series and which one the run folder holds."""

    runs: tuple[RepeatRun, ...]
    kept: int  # 1-based run number whose artefacts the run folder holds
    requested: int

    def to_json(self) -> dict[str, Any]:
        """report.json's ``repeats`` object (see REPORT_SCHEMA.md)."""
        means = [r.step_time_ms for r in self.runs if r.recorded]
        return {
            "requested": self.requested,
            "count": len(self.runs),
            "kept": self.kept,
            "kept_rule": KEPT_RULE,
            "runs": [r.to_json() for r in self.runs],
            "step_time_ms": {
                "min": round(min(means), 4) if means else 0.0,
                "median": round(statistics.median(means), 4) if means else 0.0,
                "max": round(max(means), 4) if means else 0.0,
            },
        }


def summarise(run: int, profile: ProfileData) -> RepeatRun:
    """One run as the series records it (its breakdown from the same diagnosis the report uses)."""
    breakdown = diagnose(profile, []).breakdown if profile.steps else {}
    return RepeatRun(
        run=run,
        status=profile.status.status,
        step_time_ms=profile.mean_step_us / 1000.0,
        step_times_ms=tuple(s.duration_us / 1000.0 for s in profile.steps),
        breakdown=dict(breakdown),
    )


def median_run(runs: list[RepeatRun]) -> int:
    """The run number with the median mean step time among the recorded runs (lower median for even counts)."""
    recorded = sorted((r for r in runs if r.recorded), key=lambda r: (r.step_time_ms, r.run))
    if not recorded:
        return runs[-1].run
    return recorded[(len(recorded) - 1) // 2].run


def staging_dir(out_dir: Path, run: int) -> Path:
    """Where run ``run`` of the series writes: hidden, beside the run folder."""
    return out_dir.parent / f".{out_dir.name}.repeat-{run}"


def move_into(source: Path, target: Path) -> None:
    """Move every entry of ``source`` into ``target`` (replacing what is there), then remove ``source``."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        dest = target / entry.name
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        elif dest.exists() or dest.is_symlink():
            dest.unlink()
        os.replace(entry, dest)
    source.rmdir()


class Series:
    """One script's repeat series in progress: its runs so far, staged beside the run folder."""

    def __init__(self, options: RunOptions, count: int) -> None:
        self.options = options
        self.count = count
        self.outcomes: dict[int, tuple[RunOptions, RunOutcome]] = {}
        self.runs: list[RepeatRun] = []

    def run(self, number: int, run_one: RunOne) -> bool:
        """Run ``number`` of the series into its staging folder; whether it recorded its steps."""
        staged = replace(self.options, out_dir=staging_dir(self.options.out_dir, number))
        if staged.out_dir.exists():
            shutil.rmtree(staged.out_dir)
        outcome = run_one(staged, number)
        self.outcomes[number] = (staged, outcome)
        summary = summarise(number, profile_from_outcome(outcome, staged))
        self.runs.append(summary)
        return summary.recorded

    def finish(self, on_stage: Optional[StageCallback] = None) -> ProfiledRun:
        """Move the median run (or the failed last one) into the run folder; report every run."""
        out_dir = self.options.out_dir
        try:
            kept = self.runs[-1].run if not self.runs[-1].recorded else median_run(self.runs)
            move_into(self.outcomes[kept][0].out_dir, out_dir)
        finally:
            self.clean()
        outcome = self.outcomes[kept][1]
        outcome = replace(outcome, log_path=out_dir / OUTPUT_LOG if outcome.log_path else None)
        if on_stage is not None:
            on_stage("attributing the recorded time to lines")
        profile = profile_from_outcome(outcome, self.options)
        repeats = Repeats(runs=tuple(self.runs), kept=kept, requested=self.count)
        return ProfiledRun(outcome, profile, write_outputs(profile, out_dir, on_stage, repeats=repeats.to_json()))

    def clean(self) -> None:
        """Delete the staging folders left."""
        for staged, _ in self.outcomes.values():
            if staged.out_dir.exists():
                shutil.rmtree(staged.out_dir, ignore_errors=True)


def profile_repeated(
    options: RunOptions, count: int, run_one: RunOne, on_stage: Optional[StageCallback] = None
) -> ProfiledRun:
    """Run the script ``count`` times through ``run_one``; the run folder gets the median run
    and a report whose ``repeats`` lists them all.  The first failed run ends the series."""
    series = Series(options, count)
    try:
        for number in range(1, count + 1):
            if not series.run(number, run_one):
                break
    except BaseException:
        series.clean()
        raise
    return series.finish(on_stage)


def profile_interleaved(
    before: RunOptions, after: RunOptions, count: int, run_one: RunOne, on_stage: Optional[StageCallback] = None
) -> tuple[ProfiledRun, Optional[ProfiledRun]]:
    """Two repeat series run in turn, before, after, before, after ..., so that a machine that slows down or
    speeds up meanwhile weighs on both alike.  ``run_one`` gets each side's options (tell them apart by
    ``out_dir``).  A failed run ends both series; the after side is None when it never ran."""
    series = (Series(before, count), Series(after, count))
    try:
        for number in range(1, count + 1):
            if not all(side.run(number, run_one) for side in series):
                break
        first = series[0].finish(on_stage)
        return first, series[1].finish(on_stage) if series[1].runs else None
    finally:
        for side in series:
            side.clean()  # what a failure left staged (finish already cleaned its own)
