"""Profile results on the source: inlay hints at hot lines, Information diagnostics.

Reads the runtime's ``report.json`` (script, step_time_ms, bottleneck {kind,
share, evidence, recommendations}, hotspots [{path, line, self_ms_per_step,
share, category, static_codes}], ...) and turns it into per-target
:class:`Annotation` s.  They then live on the TargetState: they move with
edits above them and disappear from edited lines (see ``documents``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from lsprotocol import types

from .comparison import LineDeltas, delta_label
from .documents import Annotation, ProfileSummary
from .positions import Positions

TOP_DIAGNOSTICS = 3  # hot lines that also get an Information diagnostic
TOP_HINTS = 10  # hot lines that get an inlay hint
_CATEGORY = {
    "data_loading": "data wait",
    "host_sync": "host sync",
    "python_overhead": "Python overhead",
    "launch_overhead": "launch overhead",
    "compute": "compute",
    "optimizer": "optimizer",
    "communication": "communication",
    "idle": "idle",
}

# Maps a line of the profiled script to (target uri, line there), or None.
LineMapper = Callable[[str, int], tuple[str, int] | None]


def category_label(category: str) -> str:
    return _CATEGORY.get(category, category.replace("_", " "))


def hint_label(share: float, ms_per_step: float, category: str, delta: tuple[float, bool] | None = None) -> str:
    """``▮▮▮ 38% · 12.1 ms/step · data wait``; with ``delta`` (ms, measurable) since the previous
    profile, ``12.1 ms/step (−30 ms)``."""
    bars = "▮" * max(1, min(5, int(share * 10)))
    change = f" {delta_label(*delta)}" if delta is not None else ""
    return f"{bars} {share:.0%} · {ms_per_step:.1f} ms/step{change} · {category_label(category)}"


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def summary_from_report(report: dict[str, Any], report_path: Path) -> ProfileSummary:
    bottleneck = report.get("bottleneck") or {}
    html = report_path.with_name("report.html")
    return ProfileSummary(
        report_path=str(report_path),
        html_path=str(html) if html.exists() else None,
        bottleneck=str(bottleneck.get("kind") or "unknown"),
        share=_float(bottleneck.get("share")),
        step_time_ms=_float(report.get("step_time_ms")),
    )


def annotations_from_report(
    report: dict[str, Any],
    mapper: LineMapper,
    header: tuple[str, int] | None,
    deltas: LineDeltas | None = None,
    versus: str = "",
) -> dict[str, list[Annotation]]:
    """Hot lines (and the verdict on the loop header) per target URI; ``deltas`` and ``versus`` (the
    comparison's verdict) when the document was profiled before."""
    result: dict[str, list[Annotation]] = {}
    hotspots = [h for h in report.get("hotspots") or [] if isinstance(h, dict)]
    hotspots.sort(key=lambda h: -_float(h.get("share")))
    for rank, hotspot in enumerate(hotspots[:TOP_HINTS]):
        where = mapper(str(hotspot.get("path", "")), int(_float(hotspot.get("line"))))
        if where is None:
            continue
        share, ms = _float(hotspot.get("share")), _float(hotspot.get("self_ms_per_step"))
        category = str(hotspot.get("category", ""))
        codes = tuple(str(c) for c in hotspot.get("static_codes") or ())
        delta = deltas.get((str(hotspot.get("path", "")), int(_float(hotspot.get("line"))))) if deltas is not None else None
        message = ""
        if rank < TOP_DIAGNOSTICS:
            detail = f"{share:.0%} of step time ({ms:.1f} ms/step, {category_label(category)})"
            message = f"profile confirms {', '.join(codes)}: {detail}" if codes else f"profile: {detail}"
            if delta is not None:
                message += f", {delta_label(*delta)[1:-1]} since the previous profile"
        uri, line = where
        result.setdefault(uri, []).append(
            Annotation(line, hint_label(share, ms, category, delta), message, share, "hotspot", codes, ms, category,
                       delta[0] if delta is not None else None)
        )
    for uri, annotation in runtime_finding_annotations(report, mapper):
        result.setdefault(uri, []).append(annotation)
    bottleneck = report.get("bottleneck") or {}
    if header is not None and bottleneck:
        share = _float(bottleneck.get("share"))
        kind = str(bottleneck.get("kind") or "unknown")
        message = (
            f"profile verdict: {category_label(kind)} bound — {share:.0%} of step time, "
            f"{_float(report.get('step_time_ms')):.1f} ms/step"
        )
        recommendations = bottleneck.get("recommendations") or []
        if recommendations:
            first = recommendations[0]
            text = first.get("action") or first.get("title") if isinstance(first, dict) else first
            if text:
                message += f". Try: {text}"
        if versus:
            message += f". Since the previous profile: {versus}"
        uri, line = header
        result.setdefault(uri, []).append(Annotation(line, "", message, share, "verdict"))
    return result


def runtime_finding_annotations(report: dict[str, Any], mapper: LineMapper) -> list[tuple[str, Annotation]]:
    """Each runtime finding (TTR101, TTR603, ...) as an Information diagnostic on its line, with its first fix."""
    out = []
    for finding in report.get("runtime_findings") or []:
        if not isinstance(finding, dict):
            continue
        where = mapper(str(finding.get("path", "")), int(_float(finding.get("line"))))
        if where is None:
            continue
        code = str(finding.get("code", ""))
        message = f"{code}: {finding.get('message', '')}"
        recommendations = [r for r in finding.get("recommendations") or [] if isinstance(r, dict) and r.get("action")]
        if recommendations and recommendations[0]["action"] not in message:
            message += f". Try: {recommendations[0]['action']}"
        share, ms = _float(finding.get("share")), _float(finding.get("self_ms_per_step"))
        out.append((where[0], Annotation(where[1], "", message, share, "finding", (code,), ms)))
    return out


def inlay_hints(annotations: list[Annotation], positions: Positions, range_: types.Range) -> list[types.InlayHint]:
    hints = []
    for annotation in annotations:
        if not annotation.label or not range_.start.line <= annotation.line - 1 <= range_.end.line:
            continue
        hints.append(
            types.InlayHint(
                position=positions.line_end(annotation.line),
                label=annotation.label,
                padding_left=True,
                tooltip=annotation.message or None,
            )
        )
    return hints
