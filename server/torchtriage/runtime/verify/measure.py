"""``fix --verify``: measure each fix against the script as it is, in interleaved rounds.

The loop the guides prescribe, closed: profile, change one thing, profile
again, keep what helped.  For each :class:`.candidates.Candidate` the fixed
script is written beside the original (a hidden sibling, so its imports,
``__file__`` and relative paths behave as the original's) and removed at the
end.  Every version runs with the same seed, the same window and the same
arguments; the runs go in rounds (baseline, fix 1, fix 2, ..., baseline, fix 1,
...) so that a machine that slows down weighs on all alike.  Each fix is then
compared with the baseline by the comparison ``torchtriage compare`` makes
(:func:`..compare.document.compare_runs`: the block-bootstrap interval of the
mean step difference and the 5 % floor), and its loss trajectory with the
baseline's (:mod:`.losses`).  When more than one fix helps, their combination
is measured too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from ..compare.document import compare_runs, write_comparison
from ..compare.runs import CompareError, load_run
from ..diagnosis.bottleneck import diagnose
from ..diagnosis.machine import WorkerPlan, host_physical_cores
from ..profiling.finish import StageCallback, profile_from_outcome
from ..profiling.repeats import RunOne, Series
from ..profiling.runner import RunOptions
from .candidates import Candidate, distinct, runtime_candidates, static_candidates
from .losses import LossCheck, compare_losses

from ...analysis.fixes import apply_edits

DEFAULT_SEED = 0
BASELINE = "baseline"
COMBINED = "combined"


@dataclass
class Trial:
    """One version of the script being measured: its candidate (None for the baseline), file and series."""

    name: str
    candidate: Optional[Candidate]
    script: Path
    series: Series
    alive: bool = True
    losses: Optional[list[Optional[float]]] = None
    status: str = ""
    message: str = ""

    def run(self, number: int, run_one: RunOne) -> None:
        """Run ``number`` of this version; a failed run ends its series (its status says why)."""
        recorded = self.series.run(number, run_one)
        staged, outcome = self.series.outcomes[number]
        if self.losses is None:
            self.losses = list((outcome.agent or {}).get("losses") or [])
        if not recorded:
            self.alive = False
            status = profile_from_outcome(outcome, staged).status
            self.status, self.message = status.status, status.message


@dataclass
class Measured:
    """A fix as measured: the comparison's step figures, its verdict, the loss check."""

    trial: Trial
    step_time: Optional[dict[str, Any]] = None  # compare.json's step_time (None when the fix's runs failed)
    verdict: str = ""  # compare.json's verdict sentence
    losses: Optional[LossCheck] = None
    compare_json: Optional[Path] = None  # the comparison with the baseline, in the fix's run folder

    @property
    def helps(self) -> bool:
        return self.step_time is not None and self.step_time.get("change") == "faster"


@dataclass
class Verification:
    """Everything ``fix --verify`` found: the baseline, each fix measured, the combination of those that help."""

    script: Path
    original: str
    out_dir: Path
    repeat: int
    seed: int
    baseline: Trial
    fixes: list[Measured] = field(default_factory=list)
    combined: Optional[Measured] = None
    kept_text: Optional[str] = None  # the script with every fix that helps (None: none helps)
    candidates_found: int = 0


def _fixed_path(script: Path, index: int) -> Path:
    """The hidden sibling a fixed version is written to."""
    return script.with_name(f".{script.stem}.torchtriage-verify-{index}{script.suffix}")


def _trial(name: str, base: RunOptions, out_dir: Path, repeat: int, candidate: Optional[Candidate], script: Path) -> Trial:
    options = replace(base, script=script, out_dir=out_dir / name, run_name=name)
    return Trial(name, candidate, script, Series(options, repeat))


def _kinds(trial: Trial) -> tuple[list[str], Optional[int], str]:
    """The baseline's verdicts (bottleneck and secondary), its loader workers and its device, from its first run."""
    staged, outcome = trial.series.outcomes[1]
    profile = profile_from_outcome(outcome, staged)
    if not profile.steps:
        return [], None, "cpu"
    diagnosis = diagnose(profile, [])
    return [diagnosis.bottleneck.kind, *(v.kind for v in diagnosis.secondary)], profile.loader_workers, profile.device


def _measure(baseline: Trial, trial: Trial, on_stage: Optional[StageCallback]) -> Measured:
    """Finish the trial's series and compare it with the baseline's."""
    measured = Measured(trial)
    if not trial.series.runs:
        return measured
    trial.series.finish(on_stage)
    if not trial.alive:
        return measured
    try:
        after = load_run(trial.series.options.out_dir)
        document = compare_runs(load_run(baseline.series.options.out_dir), after)
    except CompareError as exc:
        trial.status, trial.message = "not_compared", str(exc)
        return measured
    measured.compare_json = write_comparison(document, after)  # the fix's report.html gets "Compared with" the baseline
    measured.step_time = document["step_time"]
    measured.verdict = document["verdict"]["text"]
    measured.losses = compare_losses(baseline.losses or [], trial.losses or [])
    return measured


def _combination(helpful: list[Measured], original: str) -> Optional[Candidate]:
    """Every fix that helps at once, the largest speed-up first (an edit that overlaps one taken is dropped)."""
    if len(helpful) < 2:
        return None
    ordered = sorted(helpful, key=lambda m: -float((m.step_time or {}).get("speedup") or 0.0))
    edits = [edit for m in ordered for edit in m.trial.candidate.edits]  # type: ignore[union-attr]
    text = apply_edits(original, edits)
    codes = "+".join(m.trial.candidate.code for m in ordered)  # type: ignore[union-attr]
    return Candidate(codes, 0, "every fix that helps, together", "combined", "unsafe", tuple(edits), text)


def verify_fixes(
    base: RunOptions,
    repeat: int,
    run_one: RunOne,
    seed: int = DEFAULT_SEED,
    on_stage: Optional[StageCallback] = None,
    on_plan: Optional[Callable[[list[Candidate]], None]] = None,
) -> Verification:
    """Measure every fix of ``base.script`` against the script as it is (see the module docstring).

    ``run_one`` runs one profile (the host's progress display wraps it); ``on_plan`` hears the
    candidates once the baseline's first run has said which runtime advice applies."""
    script = base.script.resolve()
    original = script.read_bytes().decode("utf-8")  # newlines as they are: --apply keeps CRLF files CRLF
    out_dir = base.out_dir
    base = replace(base, seed=seed, record_losses=True)
    baseline = _trial(BASELINE, base, out_dir, repeat, None, script)
    result = Verification(script, original, out_dir, repeat, seed, baseline)
    written: list[Path] = []
    try:
        static = static_candidates(script, original)
        baseline.run(1, run_one)
        if not baseline.alive:
            baseline.series.finish(on_stage)
            return result
        kinds, workers, device = _kinds(baseline)
        runtime = runtime_candidates(script, original, kinds, WorkerPlan(host_physical_cores(), workers).target, device == "cuda")
        candidates = distinct([*static, *runtime], original)
        result.candidates_found = len(static) + len(runtime)
        if on_plan is not None:
            on_plan(candidates)
        trials = []
        for index, candidate in enumerate(candidates, start=1):
            path = _fixed_path(script, index)
            written.append(path)
            path.write_bytes(candidate.text.encode("utf-8"))
            trials.append(_trial(f"fix-{index}-{candidate.code}", base, out_dir, repeat, candidate, path))
        for number in range(1, repeat + 1):
            for trial in ([] if number == 1 else [baseline]) + trials:
                if trial.alive:
                    trial.run(number, run_one)
        baseline.series.finish(on_stage)
        result.fixes = [_measure(baseline, trial, on_stage) for trial in trials]
        helpful = [m for m in result.fixes if m.helps]
        combination = _combination(helpful, original)
        if combination is not None:
            path = _fixed_path(script, 0)
            written.append(path)
            path.write_bytes(combination.text.encode("utf-8"))
            trial = _trial(COMBINED, base, out_dir, repeat, combination, path)
            for number in range(1, repeat + 1):
                if trial.alive:
                    trial.run(number, run_one)
            result.combined = _measure(baseline, trial, on_stage)
        if helpful:
            best = result.combined if result.combined is not None and result.combined.helps else None
            result.kept_text = best.trial.candidate.text if best is not None else max(  # type: ignore[union-attr]
                helpful, key=lambda m: float((m.step_time or {}).get("speedup") or 0.0)).trial.candidate.text  # type: ignore[union-attr]
        return result
    finally:
        for path in written:
            path.unlink(missing_ok=True)
