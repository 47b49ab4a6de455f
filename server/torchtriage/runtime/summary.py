"""The short terminal summary ``torchtriage profile`` prints: a rich renderable.

Built from the report.json document only: verdict and step time, the
breakdown, the top five lines, the first fixes, and where the run folder is.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

KIND_TITLES = MappingProxyType({
    "data_loading": "data loading",
    "host_sync": "host-device syncs",
    "python_overhead": "Python overhead",
    "launch_overhead": "op launch/dispatch overhead",
    "compute": "compute",
    "communication": "communication",
    "memory_growth": "memory growth",
    "none": "no clear bottleneck",
})
STYLES = MappingProxyType({
    "data_loading": "red",
    "host_sync": "yellow",
    "python_overhead": "green",
    "launch_overhead": "magenta",
    "compute": "blue",
    "optimizer": "cyan",
    "communication": "bright_blue",
    "idle": "bright_black",
})
TOP_LINES = 5
BAR_WIDTH = 30


def _where(path: str, line: int) -> str:
    return f"{Path(path).name}:{line}"


def _verdict_line(report: dict[str, Any]) -> Text:
    b = report["bottleneck"]
    kind = b["kind"]
    text = Text("Bottleneck: ", style="bold")
    text.append(KIND_TITLES.get(kind, kind), style=f"bold {STYLES.get(kind, 'red')}")
    if kind == "memory_growth":
        growth = report["memory"]["growth_bytes_per_step"] / 2**20
        text.append(f"  (+{growth:.2f} MiB per step)")
    elif kind != "none":
        text.append(f"  ({b['share'] * 100:.0f}% of step time)")
    text.append(f"   step {report['step_time_ms']:.2f} ms mean over {report['steps_profiled']} steps on {report['device']}")
    return text


def _breakdown(report: dict[str, Any]) -> Table:
    table = Table(title="Where a step goes", title_justify="left", show_edge=False, box=None, pad_edge=False)
    table.add_column("category")
    table.add_column("ms/step", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    for category, share in sorted(report["breakdown"].items(), key=lambda kv: -kv[1]):
        if share < 0.005:
            continue
        bar = "\u2588" * max(1, round(share * BAR_WIDTH))
        table.add_row(
            category.replace("_", " "),
            f"{report['breakdown_ms'][category]:.2f}",
            f"{share * 100:.0f}%",
            Text(bar, style=STYLES.get(category, "white")),
        )
    return table


def _hot_lines(report: dict[str, Any]) -> Table:
    table = Table(title=f"Top {TOP_LINES} lines", title_justify="left", show_edge=False, box=None, pad_edge=False)
    spots = report["hotspots"][:TOP_LINES]
    label_w = max([10] + [len(_where(h["path"], h["line"])) for h in spots])
    table.add_column("line", no_wrap=True, min_width=label_w)
    table.add_column("ms/step", justify="right", no_wrap=True, min_width=7)
    table.add_column("share", justify="right", no_wrap=True, min_width=5)
    table.add_column("category", no_wrap=True, min_width=15)
    table.add_column("static", no_wrap=True)
    table.add_column("source", overflow="ellipsis", no_wrap=True, ratio=1, min_width=8)
    for h in spots:
        table.add_row(
            _where(h["path"], h["line"]),
            f"{h['self_ms_per_step']:.2f}",
            f"{h['share'] * 100:.0f}%",
            Text(h["category"].replace("_", " "), style=STYLES.get(h["category"], "white")),
            Text(",".join(h["static_codes"]), style="bold red"),
            h.get("source", ""),
        )
    return table


def render_summary(report: dict[str, Any], run_dir: Path | str | None = None) -> RenderableType:
    """Verdict, breakdown, top lines, first fixes and the run folder, as one rich Group."""
    parts: list[RenderableType] = []
    status = report["status"]
    if status["status"] not in ("completed", "stopped_after_window"):
        parts.append(Text(f"Run {status['status']}: {status['message']}", style="bold red"))
    parts.append(_verdict_line(report))
    for e in report["bottleneck"]["evidence"][:3]:
        parts.append(Text(f"  \u2022 {e['text']}"))
    if report["steps_profiled"]:
        parts += [Text(""), _breakdown(report)]
    if report["hotspots"]:
        parts += [Text(""), _hot_lines(report)]
    recs = report["bottleneck"]["recommendations"][:3]
    if recs:
        parts.append(Text("\nTry first:", style="bold"))
        parts += [Text(f"  {i}. {r['action']}") for i, r in enumerate(recs, 1)]
    extra = [f for f in report["runtime_findings"] if f["severity"] == "warning"]
    for f in extra[:3]:
        parts.append(Text(f"  {f['code']} {_where(f['path'], f['line'])}: {f['message']}", style="magenta"))
    if run_dir is not None:
        folder = Path(run_dir)
        parts.append(Text(f"\nRun folder: {folder}  (report.html, report.json)", style="dim"))
    return Group(*parts)
