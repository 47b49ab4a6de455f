"""One lab.json row per configuration, from its runs (or the reason it has none).

A row is ``measured`` when every run ended as planned, ``failed`` with the
first failure's reason otherwise (what the runs that did measure is kept:
a loss that became NaN still has its step times), ``skipped`` when the device
makes it pointless and ``not_run`` when the script cannot run at all.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Optional

from ..agent.lab.wire import LabResult
from .measure import StepStats, change, step_stats
from .plan import BASELINE, Configuration, LabSettings
from .run import ConfigRun, LabRuns

MESSAGE_CHARS = 400
FAILURE_TEXT = {
    "compile_failed": "torch.compile failed",
    "unsupported_dtype": "the dtype is not supported here",
    "out_of_memory": "out of memory",
    "loss_not_finite": "the loss became NaN or infinite",
    "too_few_steps": "the script ended before the measured steps",
    "no_model": "no trained model was found",
    "no_steps": "no training step was seen",
    "timeout": "timed out",
}


def _short(message: str) -> str:
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return first if len(first) <= MESSAGE_CHARS else first[: MESSAGE_CHARS - 1] + "…"


def _empty_row(configuration: Configuration, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "name": configuration.name, "description": configuration.describe(), "precision": configuration.precision,
        "compile_mode": configuration.compile_mode, "grad_scaler": configuration.grad_scaler,
        "status": status, "reason": reason or None, "message": message, "runs": [], "steps_measured": 0,
        "step_time_ms": None, "steps_per_s": None, "batch_size": None, "samples_per_s": None,
        "speedup_vs_fp32": None, "change_vs_fp32": None, "peak_memory_bytes": None, "memory_measure": None,
        "compile_s": None, "compiles": None, "graph_breaks": None, "recompiles": None, "graphs": None,
        "model_calls": 0, "compiled_forward_calls": 0, "output_dtype": None, "models": [],
        "final_loss": None, "loss_finite": None, "loss_vs_fp32": None, "loss_check": "no_loss",
        "scaler_skipped_steps": 0, "notes": [],
    }


def _stats_json(stats: StepStats) -> dict[str, Any]:
    r = lambda v: round(v, 4)  # noqa: E731
    return {
        "median": r(stats.median_ms), "q1": r(stats.q1_ms), "q3": r(stats.q3_ms), "iqr": r(stats.iqr_ms),
        "min": r(stats.min_ms), "max": r(stats.max_ms), "low": r(stats.low_ms), "high": r(stats.high_ms),
        "run_medians": [r(m) for m in stats.run_medians_ms],
    }


def _run_json(run: ConfigRun) -> dict[str, Any]:
    result = run.result
    times = result.step_times_s if result else []
    return {
        "repeat": run.repeat, "run_dir": str(run.run_dir), "status": run.status.status, "failure": run.failure or None,
        "message": _short(run.status.message), "steps_measured": len(times),
        "median_ms": round(statistics.median(times) * 1000, 4) if times else None,
        "compile_s": round(result.compile_s, 3) if result and result.compile_mode else None,
    }


def _notes(configuration: Configuration, results: list[LabResult], settings: LabSettings) -> list[str]:
    notes: list[str] = []
    for result in results:
        notes += [n for n in result.notes if n not in notes]
    if any(r.script_autocast for r in results):
        notes.append("the script enables autocast itself around the model" + (": this row is not pure fp32" if configuration.precision == BASELINE else ""))
    if configuration.grad_scaler and any(r.script_scaler for r in results):
        notes.append("the script makes its own GradScaler: the lab did not add one")
    low = {"bf16": "bfloat16", "fp16": "float16"}.get(configuration.precision)
    if low and any(r.output_dtype == "float32" for r in results):
        notes.append(f"the model's output is float32 under {configuration.precision} autocast: its last op runs in float32 under "
                     "autocast (softmax, norms, losses), or autocast did not reach the model (one the script compiled with model.compile())")
    inside = max((r.compile_in_window_s for r in results), default=0.0)
    if inside > 0:
        notes.append(f"{inside:.2f} s of compilation happened inside the measured steps (a recompile): taken out of the step times")
    short = [len(r.step_times_s) for r in results if 0 < len(r.step_times_s) < settings.steps]
    if short:
        notes.append(f"the script ended after {min(short)} of the {settings.steps} measured steps asked for")
    skipped = sum(r.scaler_skipped_steps for r in results)
    if skipped:
        notes.append(f"the GradScaler skipped {skipped} optimizer step(s) (inf/NaN gradients)")
    return notes


def _losses(results: list[LabResult]) -> tuple[Optional[float], Optional[bool]]:
    """The final loss (first run with one; None when it is not finite: lab.json is strict JSON) and whether every loss read was finite."""
    values = [v for r in results for v in r.losses if v is not None]
    if not values:
        return None, None
    final = next(v for r in results for v in reversed(r.losses) if v is not None)
    return (final if math.isfinite(final) else None), all(math.isfinite(v) for v in values)


def build_row(configuration: Configuration, runs: list[ConfigRun], settings: LabSettings) -> tuple[dict[str, Any], Optional[StepStats]]:
    """The row of one configuration that ran (at least once), and its step statistics."""
    failed = [r for r in runs if r.failure]
    first = failed[0] if failed else None
    row = _empty_row(configuration, "failed" if first else "measured", first.failure if first else "",
                     _short(first.status.message) if first else "")
    row["runs"] = [_run_json(r) for r in runs]
    results = [r.result for r in runs if r.result is not None]
    measured = [r for r in results if r.step_times_s]
    stats = step_stats([[t * 1000 for t in r.step_times_s] for r in measured])
    row["notes"] = _notes(configuration, results, settings)
    if stats is not None:
        row["step_time_ms"] = _stats_json(stats)
        row["steps_measured"] = stats.steps
        row["steps_per_s"] = round(stats.steps_per_s, 4)
        batches = [b for r in measured for b in r.batch_sizes if b > 0]
        if batches:
            row["batch_size"] = int(statistics.median(batches))
            row["samples_per_s"] = round(row["batch_size"] * stats.steps_per_s, 2)
    peaks = [(r.peak_memory_bytes, r.memory_measure) for r in measured if r.peak_memory_bytes is not None]
    if peaks:
        row["peak_memory_bytes"], row["memory_measure"] = max(peaks, key=lambda p: p[0])
    if results:
        row["compile_s"] = round(statistics.median(r.compile_s for r in results), 3) if configuration.compile_mode else None
        for key, attr in (("compiles", "compiles"), ("graph_breaks", "graph_breaks"), ("recompiles", "recompiles"), ("graphs", "graphs")):
            row[key] = max(getattr(r, attr) for r in results) if configuration.compile_mode else None
        row["model_calls"] = sum(r.model_calls for r in measured)
        row["compiled_forward_calls"] = sum(r.compiled_calls for r in measured)
        row["output_dtype"] = next((r.output_dtype for r in measured if r.output_dtype), None)
        row["models"] = list(dict.fromkeys(name for r in results for name in r.models))
        row["scaler_skipped_steps"] = sum(r.scaler_skipped_steps for r in results)
    row["final_loss"], row["loss_finite"] = _losses(measured)
    if row["status"] == "measured":
        if stats is None or stats.steps < 2:
            row.update(status="failed", reason="too_few_steps", message=(
                f"the script ended after {max((r.steps_seen for r in results), default=0)} detected steps; the lab needs "
                f"--warmup {settings.warmup} + at least 2 measured: pass the script more steps (after --) or lower --warmup/--steps"))
        elif not row["models"]:
            row.update(status="failed", reason="no_model", message=(
                "no module whose parameters an optimizer owns was called, so there was nothing to run under autocast or compile"))
        elif row["loss_finite"] is False:
            row.update(status="failed", reason="loss_not_finite", message="the loss became NaN or infinite in the measured steps")
    return row, stats


def compare_to_baseline(rows: list[dict[str, Any]], stats: dict[str, StepStats], settings: LabSettings) -> None:
    """Fill in speed-up, change and loss check against the fp32 row (when it measured)."""
    baseline = next((row for row in rows if row["name"] == BASELINE), None)
    base_stats = stats.get(BASELINE)
    base_loss = baseline["final_loss"] if baseline and baseline["loss_finite"] else None
    for row in rows:
        own = stats.get(row["name"])
        if own is not None and base_stats is not None and row["name"] != BASELINE:
            row["speedup_vs_fp32"] = round(base_stats.median_ms / own.median_ms, 4) if own.median_ms > 0 else None
            row["change_vs_fp32"] = change(base_stats, own)
        if row["name"] == BASELINE:
            row["loss_check"] = "baseline" if row["final_loss"] is not None else "no_loss"
        elif row["loss_finite"] is False:
            row["loss_check"] = "not_finite"
        elif row["final_loss"] is None:
            row["loss_check"] = "no_loss"
        elif base_loss is None:
            row["loss_check"] = "no_baseline"
        else:
            relative = abs(row["final_loss"] - base_loss) / max(abs(base_loss), 1e-12)
            row["loss_vs_fp32"] = round(relative, 6)
            row["loss_check"] = "ok" if relative <= settings.loss_tolerance else "outside_tolerance"


def build_rows(configurations: list[Configuration], lab: LabRuns, settings: LabSettings) -> list[dict[str, Any]]:
    """Every configuration's row, in the order asked for."""
    rows, stats = [], {}
    for configuration in configurations:
        runs = [r for r in lab.runs if r.configuration == configuration]
        if not runs:
            reason, why = lab.skipped.get(configuration.name, ("cannot_run", "not run"))
            rows.append(_empty_row(configuration, "skipped" if reason == "skipped_on_cpu" else "not_run", reason, why))
            continue
        row, row_stats = build_row(configuration, runs, settings)
        rows.append(row)
        if row_stats is not None:  # a failed run's measured steps are real steps too
            stats[configuration.name] = row_stats
    compare_to_baseline(rows, stats, settings)
    return rows
