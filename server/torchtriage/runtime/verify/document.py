"""verify.json: what ``fix --verify`` measured, as one document (see VERIFY_SCHEMA.md).

``verify_document(result)`` builds it from a :class:`.measure.Verification`;
``write_verification`` puts it into the verify folder.  The change of each fix
(``faster`` / ``slower`` / ``none``) and its interval are those of compare.json's
``step_time``, so a fix is called as ``torchtriage compare`` would call it.
"""

from __future__ import annotations

import datetime
import difflib
import json
from pathlib import Path
from typing import Any, Optional

from ... import __version__
from ..compare.runs import load_run
from .measure import Measured, Trial, Verification

SCHEMA_VERSION = "1.0"
VERIFY_JSON = "verify.json"
SCHEMA_PATH = Path(__file__).resolve().parent / "verify_schema.json"
FAILED = "failed"


def load_schema() -> dict[str, Any]:
    """The JSON schema every verify.json satisfies."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def unified_diff(script: Path, before: str, after: str) -> str:
    """The change as a unified diff of the script (empty when there is none)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{script.name}", tofile=f"b/{script.name}"))


def _baseline(trial: Trial) -> dict[str, Any]:
    out: dict[str, Any] = {"run_dir": str(trial.series.options.out_dir), "status": trial.status or "completed",
                           "message": trial.message, "step_time_ms": None, "steps_profiled": 0, "bottleneck": None,
                           "runs": len(trial.series.runs), "losses": len(trial.losses or [])}
    try:
        report = load_run(trial.series.options.out_dir, require_ok=False).report
    except Exception:  # a baseline that never ran leaves no report: its status says why
        return out
    out.update(steps_profiled=int(report.get("steps_profiled") or 0), bottleneck=(report.get("bottleneck") or {}).get("kind"))
    if trial.alive:  # a failed baseline has no step time to measure the fixes against
        out["step_time_ms"] = report.get("step_time_ms")
    return out


def _fix(measured: Measured, script: Path, original: str) -> dict[str, Any]:
    trial = measured.trial
    candidate = trial.candidate
    assert candidate is not None
    step = measured.step_time or {}
    return {
        **candidate.to_json(),
        "run_dir": str(trial.series.options.out_dir),
        "runs": len(trial.series.runs),
        "status": FAILED if measured.step_time is None else "measured",
        "message": trial.message,
        "before_ms": step.get("before_ms"),
        "after_ms": step.get("after_ms"),
        "delta_ms": step.get("delta_ms"),
        "delta_pct": step.get("delta_pct"),
        "speedup": step.get("speedup"),
        "change": step.get("change", FAILED),
        "interval": step.get("interval"),
        "threshold_ms": step.get("threshold_ms"),
        "helps": measured.helps,
        "verdict": measured.verdict,
        "compare_json": str(measured.compare_json) if measured.compare_json is not None else None,
        "losses": measured.losses.to_json() if measured.losses is not None else None,
        "diff": unified_diff(script, original, candidate.text),
    }


def _warnings(result: Verification) -> list[str]:
    out = []
    for measured in [*result.fixes, *([result.combined] if result.combined else [])]:
        candidate = measured.trial.candidate
        if measured.losses is not None and measured.losses.changed and candidate is not None:
            where = f"{candidate.code} (line {candidate.line})" if candidate.line else candidate.code
            out.append(f"{where} changes the loss trajectory beyond float noise: from backward pass "
                       f"{(measured.losses.first_changed or 0) + 1} on, up to {measured.losses.max_relative_diff:.2g} "
                       f"relative; check that the fix keeps what the script learns")
        if measured.step_time is None and measured.trial.status:
            out.append(f"{measured.trial.name}: {measured.trial.status}: {measured.trial.message}")
    if result.repeat < 2:
        out.append("one run per version: the intervals do not see run-to-run noise (the 5% floor stands in for it); "
                   "--repeat 3 measures it")
    return out


def verify_document(result: Verification, applied: bool, argv: Optional[list[str]] = None) -> dict[str, Any]:
    """The verify.json document for a finished verification."""
    kept = [m for m in result.fixes if m.helps]
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"torchtriage {__version__}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "script": str(result.script),
        "argv": list(argv or []),
        "out_dir": str(result.out_dir),
        "repeat": result.repeat,
        "seed": result.seed,
        "baseline": _baseline(result.baseline),
        "candidates": result.candidates_found,
        "fixes": [_fix(m, result.script, result.original) for m in result.fixes],
        "combined": _fix(result.combined, result.script, result.original) if result.combined is not None else None,
        "kept": [{"code": m.trial.candidate.code, "line": m.trial.candidate.line} for m in kept],  # type: ignore[union-attr]
        "applied": applied,
        "diff": unified_diff(result.script, result.original, result.kept_text) if result.kept_text is not None else "",
        "warnings": _warnings(result),
    }


def write_verification(document: dict[str, Any], out_dir: Path) -> Path:
    """verify.json into the verify folder; its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / VERIFY_JSON
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path
