"""The reading of a lab table: what the two steps (precision, then compile) say.

Step one compares fp32 with the low-precision row (bf16 unless ``--modes``
named another eager precision), step two that row with its compiled
counterpart.  A step is *large* when the change is beyond the spread and at
least ``LARGE`` (20 %: guides read a smaller fp32 -> bf16 gain as "precision is
not the bottleneck"); *small* when it is beyond the spread but under that;
otherwise there is "no measurable change".
"""

from __future__ import annotations

from typing import Any, Optional

from .measure import FASTER, SAME, SLOWER, StepStats, change
from .plan import BASELINE

LARGE = 1.2  # speed-up from which a step counts as large
PROFILE_HINT = "look at the data loader and host-device syncs first (`torchtriage profile` shows which)"


def _stats(row: dict[str, Any]) -> Optional[StepStats]:
    """A row's step times, for comparing: a failed row's are none (on an H200 an eval script's rows all failed
    with no_model, the configurations never applied, and their times were read as "compile: 1.70x faster")."""
    s = row.get("step_time_ms")
    if not s or row["status"] != "measured":
        return None
    return StepStats(s["median"], s["q1"], s["q3"], s["min"], s["max"], s["low"], s["high"], row["steps_measured"], tuple(s["run_medians"]))


def _step(before: Optional[dict[str, Any]], after: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """Speed-up and kind of change between two rows, None when either has no numbers."""
    if before is None or after is None:
        return None
    a, b = _stats(before), _stats(after)
    if a is None or b is None or b.median_ms <= 0:
        return None
    kind = change(a, b)
    speedup = a.median_ms / b.median_ms
    size = "none" if kind == SAME else ("slower" if kind == SLOWER else ("large" if speedup >= LARGE else "small"))
    return {"from": before["name"], "to": after["name"], "from_ms": a.median_ms, "to_ms": b.median_ms,
            "speedup": round(speedup, 4), "change": kind, "size": size}


def _pair(rows: list[dict[str, Any]]) -> tuple[Optional[dict[str, Any]], Optional[dict[str, Any]], Optional[dict[str, Any]]]:
    """The fp32 row, the eager low-precision row, and that precision's compiled row."""
    by_name = {row["name"]: row for row in rows}
    fp32 = by_name.get(BASELINE)
    low = by_name.get("bf16") or next((r for r in rows if r["precision"] != BASELINE and not r["compile_mode"]), None)
    precision = low["precision"] if low else "bf16"
    compiled = by_name.get(f"{precision}+compile") or next(
        (r for r in rows if r["precision"] == precision and r["compile_mode"]), None)
    return fp32, low, compiled


def _ms(step: dict[str, Any]) -> str:
    return f"{step['from_ms']:.2f} → {step['to_ms']:.2f} ms/step"


def _precision_text(step: dict[str, Any], device: str) -> tuple[str, str]:
    name = f"{step['from']} → {step['to']}"
    if step["size"] == "none":
        return "precision_no_change", f"{name}: no measurable change ({_ms(step)}, within the spread): precision is not the bottleneck; {PROFILE_HINT}."
    if step["size"] == "slower" and device == "cuda":  # GPUs since Ampere run bf16 math fast: the casts cost
        return "precision_slower", (
            f"{name}: slower ({_ms(step)}): autocast adds a cast kernel before the ops it lowers, and on a step of many "
            f"small ops those launches cost more than the math saves (on an H100, examples/tiny_ops.py: 0.73×); "
            f"precision is not the bottleneck here; {PROFILE_HINT}.")
    if step["size"] == "slower":
        return "precision_slower", (
            f"{name}: slower ({_ms(step)}): this device has no fast path for {step['to']} (a CPU without AMX/AVX-512 BF16, "
            f"or casts cost more than the matmuls save); precision is not the bottleneck here; {PROFILE_HINT}.")
    gain = (step["speedup"] - 1) * 100
    if step["size"] == "small":
        return "precision_small", f"{name}: {gain:.0f} % faster ({_ms(step)}), under 20 %: precision is not the bottleneck; {PROFILE_HINT}."
    return "precision_large", f"{name}: {step['speedup']:.2f}× faster ({_ms(step)}): the step is bound by math that lower precision speeds up; take {step['to']} autocast (check the loss column)."


def _compile_text(step: dict[str, Any], row: dict[str, Any], hinted: bool) -> tuple[str, str]:
    name = f"{step['from']} → {step['to']}"
    hint = "run `torchtriage profile` to see where the step goes" if hinted else PROFILE_HINT
    breaks = f" ({row['graph_breaks']} graph breaks, {row['recompiles']} recompiles)" if row.get("graph_breaks") or row.get("recompiles") else ""
    if step["size"] in ("none", "small"):
        size = "no measurable change" if step["size"] == "none" else f"only {(step['speedup'] - 1) * 100:.0f} % faster"
        return "compile_small", (
            f"{name}: {size} ({_ms(step)}){breaks}: the kernels are already fused or the step is not launch/compute bound; "
            f"{hint}.")
    if step["size"] == "slower":
        return "compile_slower", f"{name}: slower ({_ms(step)}){breaks}: compiling does not pay here; keep the eager model."
    return "compile_large", f"{name}: {step['speedup']:.2f}× faster ({_ms(step)}){breaks}: the step was launch or memory-traffic bound; take torch.compile (compile time: {row['compile_s']:.1f} s once)."


def build_reading(rows: list[dict[str, Any]], device: str = "cpu") -> dict[str, Any]:
    """lab.json's ``reading``: both steps with their sizes, a verdict key and the sentences to print
    (worded for the DEVICE type the rows ran on)."""
    fp32, low, compiled = _pair(rows)
    precision = _step(fp32, low)
    compiling = _step(low, compiled)
    lines: list[dict[str, str]] = []
    if precision is not None:
        key, text = _precision_text(precision, device)
        lines.append({"key": key, "text": text})
    elif low is not None:
        lines.append({"key": "precision_unknown", "text": f"{BASELINE} → {low['name']}: not compared ({_why(fp32, low)})."})
    if compiling is not None and compiled is not None:
        key, text = _compile_text(compiling, compiled, any(PROFILE_HINT in line["text"] for line in lines))
        lines.append({"key": key, "text": text})
    elif compiled is not None:
        lines.append({"key": "compile_unknown", "text": f"{low['name'] if low else 'bf16'} → {compiled['name']}: not compared ({_why(low, compiled)})."})
    verdict = _verdict(precision, compiling)
    if verdict == "take_both":
        total = _step(fp32, compiled)
        factor = f" ({total['speedup']:.2f}× over {BASELINE})" if total else ""
        lines.append({"key": "take_both", "text": f"Both steps are large: take both{factor}."})
    fastest = _fastest(rows)
    if fastest is not None and len([r for r in rows if r["status"] == "measured"]) > 1:
        lines.append({"key": "fastest", "text": _fastest_text(fastest, rows)})
    return {"precision": precision, "compile": compiling, "verdict": verdict, "fastest": fastest["name"] if fastest else None, "lines": lines}


def _fastest_text(fastest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    ms = f"{fastest['step_time_ms']['median']:.2f} ms/step"
    if fastest["name"] != BASELINE:
        return f"Fastest here: {fastest['name']} ({ms}, {fastest['speedup_vs_fp32']:.2f}× {BASELINE})."
    others = [r for r in rows if r["status"] == "measured" and r["name"] != BASELINE]
    if all(r["change_vs_fp32"] == SLOWER for r in others):
        return f"Fastest here: {BASELINE} as written ({ms})."
    return f"No configuration is measurably faster than {BASELINE} as written ({ms})."


def _fastest(rows: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The measured row measurably faster than fp32 with the lowest median; else fp32 (when it measured)."""
    measured = [r for r in rows if r["status"] == "measured" and r.get("step_time_ms")]
    faster = [r for r in measured if r.get("change_vs_fp32") == FASTER]
    if faster:
        return min(faster, key=lambda r: r["step_time_ms"]["median"])
    return next((r for r in measured if r["name"] == BASELINE), None)


def _why(before: Optional[dict[str, Any]], after: dict[str, Any]) -> str:
    for row in (before, after):
        if row is not None and row["status"] != "measured":
            return f"{row['name']} {row['status'].replace('_', ' ')}: {row['reason'] or ''}".rstrip(": ")
    return "missing numbers"


def _verdict(precision: Optional[dict[str, Any]], compiling: Optional[dict[str, Any]]) -> str:
    p = precision["size"] if precision else None
    c = compiling["size"] if compiling else None
    if p == "large" and c == "large":
        return "take_both"
    if p == "large":
        return "take_low_precision"
    if c == "large":
        return "take_compile"
    if p is None:
        return "incomplete"
    return "neither_helps"  # precision gave little or nothing, and compile did not make up for it
