"""``%torchtriage_check``: the kernel's input history analysed as one notebook."""

from __future__ import annotations

import html
from typing import Any, Sequence

from ..analysis.notebooks import analyze_cells
from ..config import Settings
from ..findings import Finding

CHECK_MIME = "application/vnd.torchtriage.findings+json"


def check_history(history: Sequence[str], current: int, settings: Settings | None = None) -> dict[str, Any]:
    """Findings for In [1] .. In [current], as a display bundle.  ``history`` is the raw input history
    (``input_hist_raw``: cell magics such as ``%%torchtriage`` or ``%%time`` as typed, so their bodies are
    analysed as the editor analyses them, not as the string IPython turns them into)."""
    numbers = [n for n in range(1, min(current, len(history) - 1) + 1) if history[n].strip()]
    cells = [history[n] for n in numbers]
    findings = analyze_cells(cells, "<kernel>", settings, numbers) if cells else []
    return {
        CHECK_MIME: {"findings": [_json(f) for f in findings], "cells": numbers},
        "text/plain": _text(findings, len(cells)),
        "text/html": _html(findings, len(cells)),
    }


def _where(f: Finding) -> str:
    cell = f.cell.cell if f.cell else "?"
    return f"In [{cell}] line {f.span.line}"


def _json(f: Finding) -> dict[str, Any]:
    data = f.to_json()
    data["execution_count"] = f.cell.cell if f.cell else None
    return data


def _text(findings: Sequence[Finding], cells: int) -> str:
    if not findings:
        return f"torchtriage: no findings in {cells} cell(s)"
    lines = [f"{_where(f)}: {f.code} {f.message}" for f in findings]
    return "\n".join(lines + [f"torchtriage: {len(findings)} finding(s) in {cells} cell(s)"])


def _html(findings: Sequence[Finding], cells: int) -> str:
    if not findings:
        return f"<p>torchtriage: no findings in {cells} cell(s)</p>"
    rows = "".join(
        f"<tr><td>{html.escape(_where(f))}</td><td><code>{html.escape(f.code)}</code></td><td>{html.escape(f.message)}</td></tr>"
        for f in findings
    )
    return f"<table class='torchtriage-findings'><tr><th>where</th><th>code</th><th>message</th></tr>{rows}</table>"
