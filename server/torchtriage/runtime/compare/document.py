"""compare.json: the comparison of two runs as one document (see COMPARE_SCHEMA.md).

``compare_runs(before, after)`` builds it from the two reports alone;
``write_comparison`` puts compare.json into the newer run's folder and
renders that run's report.html again with a "Compared with" section.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from ... import __version__
from ..report.html import render_html
from ..report.writer import REPORT_HTML, REPORT_JSON
from . import deltas
from .matching import Matcher, finding_fates, match_hot_lines
from .runs import COMPARE_JSON, Run
from .spread import REPEATS, run_spread
from .verdict import verdict

SCHEMA_VERSION = "1.2"
SCHEMA_PATH = Path(__file__).resolve().parent / "compare_schema.json"
SINGLE_RUN_NOTE = (
    "single runs: the interval comes from each run's own steps, which do not see run-to-run noise (the 5% floor "
    "stands in for it); profile both with --repeat 3 for that"
)


def load_schema() -> dict[str, Any]:
    """The JSON schema every compare.json satisfies."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _run(run: Run) -> dict[str, Any]:
    r = run.report
    repeats = r.get("repeats") or {}
    return {
        "run_dir": str(run.folder),
        "report": str(run.folder / REPORT_JSON),
        "script": run.script,
        "created": r.get("created"),
        "status": r["status"].get("status"),
        "device": r.get("device"),
        "steps_profiled": int(r.get("steps_profiled") or 0),
        "repeats": int(repeats.get("count") or 1),
        "step_time_ms": float(r["step_time_ms"]),
        "bottleneck": (r.get("bottleneck") or {}).get("kind", "none"),
    }


def _warnings(a: Run, b: Run) -> list[str]:
    """Differences that make the comparison less direct (it is still made)."""
    out = []
    if a.script != b.script:
        out.append(f"different scripts: {a.script} and {b.script}; lines are matched by file name and text")
    for key, what in (("device", "devices"), ("torch_version", "torch versions"), ("argv", "script arguments")):
        x, y = a.report.get(key), b.report.get(key)
        if key == "argv":
            x, y = (x or [])[1:], (y or [])[1:]
        if x != y:
            out.append(f"different {what}: {x} and {y}")
    if a.created > b.created:
        out.append(f"the 'after' run ({b.name}) was written before the 'before' run ({a.name}); compared in the order given")
    return out


def _fate(f: Any) -> dict[str, Any]:
    def place(item: dict[str, Any] | None) -> dict[str, Any] | None:
        return {"path": item["path"], "line": item["line"]} if item else None

    return {
        "status": f.status,
        "code": f.code,
        "name": f.name,
        "category": f.category,
        "line_status": f.line_status,
        "before": place(f.before),
        "after": place(f.after),
    }


def compare_runs(before: Run, after: Run) -> dict[str, Any]:
    """The compare.json document for two runs (``before`` first)."""
    a, b = before.report, after.report
    sa, sb = run_spread(a), run_spread(b)
    matcher = Matcher(a, b)
    fates = finding_fates(a, b, matcher)
    step = deltas.step_time(a, b, sa, sb)
    rows = deltas.categories(a, b, sa, sb)
    kinds = ((a.get("bottleneck") or {}).get("kind", "none"), (b.get("bottleneck") or {}).get("kind", "none"))
    lines = deltas.lines(match_hot_lines(a, b, matcher), step["threshold_ms"])
    warnings = _warnings(before, after) + matcher.number_warnings()
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"torchtriage {__version__}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "before": _run(before),
        "after": _run(after),
        "same_script": before.script == after.script,
        "warnings": warnings,
        "noise": {
            "before": {"source": sa.source, "runs": sa.runs, "spread_ms": round(sa.step_ms, 4)},
            "after": {"source": sb.source, "runs": sb.runs, "spread_ms": round(sb.step_ms, 4)},
            "note": "" if REPEATS in (sa.source, sb.source) else SINGLE_RUN_NOTE,
        },
        "step_time": step,
        "categories": rows,
        "lines": lines,
        "counts": deltas.counts(a, b),
        "memory": deltas.memory(a, b),
        "findings": [_fate(f) for f in fates],
        "verdict": verdict(step, rows, fates, kinds, (sa, sb)),
    }


def write_comparison(document: dict[str, Any], after: Run) -> Path:
    """compare.json into the newer run's folder, and its report.html again with the comparison; returns compare.json."""
    path = after.folder / COMPARE_JSON
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    html = render_html(after.report, after.folder, comparison=document)
    (after.folder / REPORT_HTML).write_text(html, encoding="utf-8")
    return path


def load_comparison(folder: Path) -> dict[str, Any] | None:
    """The compare.json a run folder holds, if any."""
    try:
        return json.loads((Path(folder) / COMPARE_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
