"""The lab: the same script, steps and seed under fp32, bf16 autocast and bf16 + torch.compile.

``plan`` (configurations, settings) -> ``run`` (one child process per run,
the lab agent in ``runtime/agent/lab_*.py``) -> ``rows`` and ``measure``
(statistics, changes beyond the spread) -> ``reading`` -> ``report`` (lab.json,
validated by ``runtime/lab/lab_schema.json``) and ``html`` (lab.html); ``summary``
renders the terminal table.  Hosts call ``run_and_report``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .plan import Configuration, LabSettings
from .report import LabPaths, build_lab, write_lab
from .run import EventCallback, StartCallback, run_lab


def run_and_report(
    script: Path, args: list[str], python: str, lab_dir: Path, configurations: list[Configuration], settings: LabSettings,
    on_start: Optional[StartCallback] = None, on_event: Optional[EventCallback] = None,
) -> tuple[dict[str, Any], LabPaths]:
    """Run every configuration, then write lab.json and lab.html into ``lab_dir``; the document and the paths."""
    runs = run_lab(configurations, settings, script, args, python, lab_dir, on_start=on_start, on_event=on_event)
    document = build_lab(script, args, settings, configurations, runs, lab_dir)
    return document, write_lab(document, lab_dir)


__all__ = ["Configuration", "LabPaths", "LabSettings", "run_and_report"]
