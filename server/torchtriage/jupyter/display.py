"""One profiled cell as a rich display: the torchtriage MIME type, HTML and plain text.

``application/vnd.torchtriage.profile+json`` carries report.json unchanged
under ``report`` with what a notebook front end needs beside it (the cell's
execution count, which cells the hot lines are in, the line offset of the
cell's body).  ``text/html`` is report.html's page (charts are inline SVG) for
front ends without our renderer (VS Code, classic Notebook, nbconvert);
``text/plain`` is the CLI summary.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, Optional

MIME_TYPE = "application/vnd.torchtriage.profile+json"
PAYLOAD_VERSION = 1


def payload(report: Optional[dict[str, Any]], status: dict[str, Any], notebook: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The MIME payload: ``{version, report (report.json or null), status, notebook, run_dir}``."""
    return {"version": PAYLOAD_VERSION, "report": report, "status": status, "notebook": notebook, "run_dir": str(run_dir)}


def text_summary(report: Optional[dict[str, Any]], status: dict[str, Any], run_dir: Path, cells: dict[str, int]) -> str:
    """The CLI summary (no colours), with the cells the hot lines are in."""
    lines = []
    if report is not None:
        from rich.console import Console

        from ..runtime.report.summary import render_summary

        buffer = io.StringIO()
        Console(file=buffer, width=110, color_system=None, soft_wrap=True, force_jupyter=False, force_terminal=False).print(render_summary(report, run_dir))
        lines.append(buffer.getvalue().rstrip())
        for path, number in _hot_cells(report, cells):
            lines.append(f"{Path(path).name} is cell In [{number}]")
    else:
        lines.append(f"torchtriage: {status.get('status')}: {status.get('message')}")
        lines.append(f"Run folder: {run_dir}")
    return "\n".join(lines)


def _hot_cells(report: dict[str, Any], cells: dict[str, int]) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    for spot in report.get("hotspots", []):
        number = cells.get(spot.get("path", ""))
        if number is not None:
            seen.setdefault(spot["path"], number)
    return list(seen.items())


def html_fallback(run_dir: Path, status: dict[str, Any]) -> str:
    """report.html's style and body, to sit inside an output area."""
    try:
        page = (run_dir / "report.html").read_text(encoding="utf-8")
    except OSError:
        return f"<pre>torchtriage: {_escape(str(status.get('status')))}: {_escape(str(status.get('message')))}</pre>"
    style = "".join(re.findall(r"<style[^>]*>.*?</style>", page, flags=re.S))
    body = re.search(r"<body[^>]*>(.*)</body>", page, flags=re.S)
    return f"<div class='torchtriage-report'>{style}{body.group(1) if body else page}</div>"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def bundle(data: dict[str, Any], html: str, text: str) -> dict[str, Any]:
    return {MIME_TYPE: data, "text/html": html, "text/plain": text}
