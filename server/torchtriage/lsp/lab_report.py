"""``torchtriage.lab``: its optional arguments as CLI options, and lab.json as the ``torchtriage/labReport`` payload.

Argument: ``uri`` or ``{uri, modes?, steps?, warmup?, repeat?}`` (``modes`` a
comma-separated string or a list, as ``--modes`` takes them).  Payload::

  {"uri": str, "labPath": str, "htmlPath": str, "device": str | null,
   "verdict": str, "reading": [str],
   "rows": [{"name", "status", "reason", "message", "medianMs", "iqrMs", "speedupVsFp32", "change",
             "samplesPerS", "peakMemoryBytes", "compileS", "graphBreaks", "recompiles",
             "outputDtype", "finalLoss", "lossCheck"}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

LAB_REPORT = "torchtriage/labReport"
LIMITS = {"steps": (2, 100_000), "warmup": (1, 10_000), "repeat": (1, 100)}


def lab_options(arguments: list[Any] | None) -> list[str]:
    """CLI options from the command's ``{uri, modes, steps, warmup, repeat}`` argument."""
    value = arguments[0] if arguments else None
    if not isinstance(value, dict):
        return []
    options: list[str] = []
    modes = value.get("modes")
    if modes is not None:
        if isinstance(modes, list) and all(isinstance(m, str) for m in modes):
            modes = ",".join(modes)
        if not isinstance(modes, str) or not modes.strip():
            raise JsonRpcInvalidParams("expected `modes` to be a string like 'fp32,bf16,bf16+compile' or a list of them")
        options += ["--modes", modes]
    for key, (low, high) in LIMITS.items():
        number = value.get(key)
        if number is None:
            continue
        if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
            raise JsonRpcInvalidParams(f"expected `{key}` to be an integer from {low} to {high}")
        options += [f"--{key}", str(number)]
    return options


def lab_payload(uri: str, lab_path: Path) -> dict[str, Any]:
    """The labReport payload for one lab.json."""
    lab = json.loads(lab_path.read_text(encoding="utf-8"))
    html = lab_path.with_name(lab["files"]["lab_html"])
    rows = []
    for r in lab["rows"]:
        stats = r["step_time_ms"] or {}
        rows.append({
            "name": r["name"], "status": r["status"], "reason": r["reason"], "message": r["message"],
            "medianMs": stats.get("median"), "iqrMs": stats.get("iqr"), "speedupVsFp32": r["speedup_vs_fp32"],
            "change": r["change_vs_fp32"], "samplesPerS": r["samples_per_s"], "peakMemoryBytes": r["peak_memory_bytes"],
            "compileS": r["compile_s"], "graphBreaks": r["graph_breaks"], "recompiles": r["recompiles"],
            "outputDtype": r["output_dtype"], "finalLoss": r["final_loss"], "lossCheck": r["loss_check"],
        })
    return {
        "uri": uri, "labPath": str(lab_path), "htmlPath": str(html) if html.exists() else None, "device": lab["device"],
        "verdict": lab["reading"]["verdict"], "reading": [line["text"] for line in lab["reading"]["lines"]], "rows": rows,
    }
