"""The terminal's tables of a GPU run and of a trace without stacks: the top GPU kernels (report.json's
``kernels``) and the top ``record_function`` ranges with the largest operator in each (``ranges``).

Built from report.json alone, as ``summary`` is; each is None when the report has no such section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rich.table import Table
from rich.text import Text

TOP_KERNELS = 5
TOP_RANGES = 5
NAME_WIDTH = 60
RANGE_WIDTH = 24
OP_WIDTH = 28


def _short(text: str, width: int = NAME_WIDTH) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, box=None, pad_edge=False)
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    return table


def kernels_table(report: dict[str, Any]) -> Optional[Table]:
    """The GPU kernels, copies and memsets with most time per step: ms, share of GPU time, Tensor Cores, line."""
    kernels = report.get("kernels")
    if not kernels or not kernels.get("rows"):
        return None
    title = (f"Top GPU kernels ({kernels['gpu_ms_per_step']:.2f} ms of GPU work a step; "
             f"Tensor Cores {kernels['tensor_core_share'] * 100:.0f}% of kernel time)")
    table = _table(title, [("ms/step", "right"), ("share", "right"), ("TC", "center"), ("line", "left"), ("kernel", "left")])
    for row in kernels["rows"][:TOP_KERNELS]:
        line = f"{Path(row['path']).name}:{row['line']}" if row.get("path") and row.get("line") else ""
        table.add_row(f"{row['ms_per_step']:.2f}", f"{row['share'] * 100:.0f}%", "\u2713" if row["tensor_cores"] else "\u00b7",
                      line, Text(_short(row["short_name"])))
    return table


def ranges_table(report: dict[str, Any]) -> Optional[Table]:
    """A trace without stacks: the ranges the step's time is innermost in, each with its largest operator."""
    ranges = report.get("ranges")
    if not ranges or not ranges.get("rows"):
        return None
    rows = sorted(ranges["rows"], key=lambda r: (-r["self_ms_per_step"], r["name"]))[:TOP_RANGES]
    step_ms = report.get("step_time_ms") or 0.0
    table = _table("Top record_function ranges, by the time each is the innermost one open (no source lines in this trace)",
                   [("ms/step", "right"), ("share", "right"), ("range", "left"), ("largest op inside", "left"), ("ms", "right")])
    for row in rows:
        top = next((o for o in row.get("top_ops") or [] if o["name"] != "(other)"), None)
        share = f"{row['self_ms_per_step'] / step_ms * 100:.0f}%" if step_ms > 0 else ""
        table.add_row(f"{row['self_ms_per_step']:.2f}", share, Text(_short(row["name"], RANGE_WIDTH)),
                      Text(_short(top["name"], OP_WIDTH)) if top else "", f"{top['self_ms_per_step']:.2f}" if top else "")
    return table
