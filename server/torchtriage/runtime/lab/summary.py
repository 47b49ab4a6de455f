"""The lab table and its reading for the terminal, from the lab.json document alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

MIB = 2**20
STATUS_STYLES = {"measured": "green", "failed": "bold red", "skipped": "bright_black", "not_run": "red"}


def _cell(value: Any, spec: str) -> str:
    return "" if value is None else format(value, spec)


COLUMNS = (  # (header, justify, only on a wide console)
    ("config", "left", False), ("ms/step (IQR)", "right", False), ("vs fp32", "right", False), ("steps/s", "right", True),
    ("samples/s", "right", False), ("peak MiB", "right", False), ("compile s", "right", False),
    ("breaks/recomp", "right", True), ("output", "left", True), ("loss", "right", False), ("status", "left", True),
)
WIDE = 132  # console columns from which every column is shown


def _mib(value: int | None) -> str:
    if value is None:
        return ""
    mib = value / MIB
    return f"{mib:,.1f}" if mib >= 10 else f"{mib:.2f}"


def _cells(r: dict[str, Any], wide: bool) -> list[Any]:
    s = r["step_time_ms"]
    status = r["status"] + (f": {r['reason']}" if r["reason"] else "")
    time = f"{s['median']:.2f} ({s['iqr']:.2f})" if s else ("" if wide else Text(r["status"].replace("_", " "), style=STATUS_STYLES.get(r["status"], "")))
    vs = ""
    if r["speedup_vs_fp32"]:
        vs = f"{r['speedup_vs_fp32']:.2f}×" + (" ~" if r["change_vs_fp32"] == "no_measurable_change" else "")
    loss = "" if r["final_loss"] is None else f"{r['final_loss']:.4g}" + (" ✗" if r["loss_check"] == "outside_tolerance" else "")
    if r["loss_check"] == "not_finite":
        loss = "NaN/inf ✗"
    return [
        Text(r["name"], style="" if r["status"] == "measured" else STATUS_STYLES.get(r["status"], "")), time, vs,
        _cell(r["steps_per_s"], ".1f"), _cell(r["samples_per_s"], ",.0f"), _mib(r["peak_memory_bytes"]),
        _cell(r["compile_s"], ".1f"), f"{r['graph_breaks']}/{r['recompiles']}" if r["graph_breaks"] is not None else "",
        r["output_dtype"] or "", loss,
        Text(status, style=STATUS_STYLES.get(r["status"], "")),
    ]


def lab_table(document: dict[str, Any], width: int = WIDE) -> Table:
    """One row per configuration: time, throughput, memory, compile, loss (fewer columns below ``WIDE``)."""
    settings = document["settings"]
    title = (f"{Path(document['script']).name} on {document['device'] or '?'}: {settings['warmup']} warm-up + "
             f"{settings['steps']} measured steps" + (f" × {settings['repeat']} runs" if settings["repeat"] > 1 else ""))
    wide = width >= WIDE
    keep = [i for i, (_, _, only_wide) in enumerate(COLUMNS) if wide or not only_wide]
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for i in keep:
        name, justify, _ = COLUMNS[i]
        table.add_column(name, justify=justify, no_wrap=name != "status", overflow="fold")  # type: ignore[arg-type]
    for r in document["rows"]:
        cells = _cells(r, wide)
        table.add_row(*[cells[i] for i in keep])
    memory = next((r["memory_measure"] for r in document["rows"] if r["memory_measure"]), None)
    table.caption = "~: within the spread (no measurable change)" + ("; peak MiB: " + (
        "torch.cuda.max_memory_allocated over the measured steps" if memory == "cuda_max_allocated"
        else "peak resident memory above its level at the first measured step") if memory else "")
    table.caption_justify = "left"
    return table


class LabTable:
    """The table laid out for the console's width."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield lab_table(self.document, options.max_width)


def render_lab_summary(document: dict[str, Any], lab_dir: Path) -> RenderableType:
    """The table, each failed or skipped row's reason, the reading, and where the files are."""
    parts: list[RenderableType] = [LabTable(document)]
    for r in document["rows"]:
        if r["status"] != "measured" and r["message"]:
            parts.append(Text(f"{r['name']}: {r['status'].replace('_', ' ')} ({r['reason']}): {r['message']}", style="red" if r["status"] in ("failed", "not_run") else "bright_black"))
    parts.append(Text("Reading", style="bold"))
    for line in document["reading"]["lines"] or [{"text": "no comparison possible: see the rows above"}]:
        parts.append(Text(f"• {line['text']}"))
    parts.append(Text(f"Lab folder: {lab_dir} (lab.json, lab.html)"))
    return Group(*parts)
