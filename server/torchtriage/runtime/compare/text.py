"""The comparison in the terminal: a rich renderable from a compare.json document only.

The verdict first, then before/after/change for the step, each category, the
op counts and peak memory, then the matched hot lines.  A change within the
spread is printed in parentheses (and dim): no measurable change.  Works at
80 columns and in pipes: numbers are never cut, source text is truncated, and
narrow terminals get the source on a line of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from .verdict import ARROW

MIB = 2**20
LINE_ROWS = 8
STYLE = {"faster": "bold green", "slower": "bold red", "none": "bold"}
NUMBER_W = 8  # "(−23.97)": wider numbers push their row, never get cut
GAP = "  "
MIN_SOURCE_W = 28


def _signed(x: float, digits: int = 2, unit: str = "") -> str:
    sign = "+" if x > 0 else "\u2212" if x < 0 else "\u00b1"
    return f"{sign}{abs(x):.{digits}f}{unit}"


def _change(x: float, measurable: bool, digits: int = 2, unit: str = "") -> Text:
    text = _signed(x, digits, unit)
    return Text(text) if measurable else Text(f"({text})", style="dim")


def _where(side: dict[str, Any] | None) -> str:
    return f"{Path(side['path']).name}:{side['line']}" if side else "\u2014"


def _spread_kind(noise: dict[str, Any]) -> str:
    kinds = {"range over runs" if side["source"] == "repeats" else "step IQR" for side in (noise["before"], noise["after"])}
    return " / ".join(sorted(kinds))


def _numbers(c: dict[str, Any]) -> Table:
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1))
    table.add_column("", no_wrap=True)
    table.add_column("before", justify="right", no_wrap=True)
    table.add_column("after", justify="right", no_wrap=True)
    table.add_column("change", justify="right", no_wrap=True)
    step = c["step_time"]
    change = _change(step["delta_ms"], step["measurable"], unit=" ms")
    table.add_row(Text("step time", style="bold"), f"{step['before_ms']:.2f} ms", f"{step['after_ms']:.2f} ms", change)
    interval = step.get("interval")
    if interval is not None:
        table.add_row(
            Text(f"  {interval['confidence']:.0%} interval", style="dim"),
            Text(f"{interval['steps']['before']} steps" + (f", {interval['runs']['before']} runs" if interval['runs']['before'] > 1 else ""), style="dim"),
            Text(f"{interval['steps']['after']} steps" + (f", {interval['runs']['after']} runs" if interval['runs']['after'] > 1 else ""), style="dim"),
            Text(f"{interval['low_ms']:+.2f} to {interval['high_ms']:+.2f} ms", style="dim"),
        )
    noise = c["noise"]
    table.add_row(
        Text(f"  spread ({_spread_kind(noise)})", style="dim"), Text(f"{step['before_spread_ms']:.2f} ms", style="dim"),
        Text(f"{step['after_spread_ms']:.2f} ms", style="dim"), "",
    )
    for row in c["categories"]:
        if max(row["before_share"], row["after_share"]) < 0.005:
            continue
        table.add_row(
            row["category"].replace("_", " "),
            f"{row['before_share'] * 100:3.0f}% {row['before_ms']:7.2f}",
            f"{row['after_share'] * 100:3.0f}% {row['after_ms']:7.2f}",
            _change(row["delta_share"] * 100, row["measurable"], 0 if abs(row["delta_share"]) >= 0.01 else 1, " pts"),
        )
    for key, label in (("ops_per_step", "ops/step"), ("kernels_per_step", "kernels/step")):
        n = c["counts"][key]
        if n["before"] or n["after"] or key == "ops_per_step":
            table.add_row(label, f"{n['before']:.1f}", f"{n['after']:.1f}", _signed(n["delta"], 1))
    peak = c["memory"]["peak_bytes"]
    table.add_row("peak memory", f"{peak['before'] / MIB:.2f} MiB", f"{peak['after'] / MIB:.2f} MiB", _signed(peak["delta"] / MIB, 2, " MiB"))
    return table


class LineDeltas:
    """The matched hot lines: before, after, change (ms/step), where, and the source text (truncated)."""

    def __init__(self, c: dict[str, Any]) -> None:
        self.rows = c["lines"][:LINE_ROWS]
        self.labels = [self._label(r) for r in self.rows]
        self.label_w = max([len("line")] + [len(label) for label in self.labels])

    @staticmethod
    def _label(row: dict[str, Any]) -> str:
        before, after = row["before"], row["after"]
        if before and after and Path(before["path"]).name == Path(after["path"]).name:
            if before["line"] == after["line"]:
                return _where(after)
            return f"{_where(before)} {ARROW} {after['line']}"
        return f"{_where(before)} {ARROW} {_where(after)}"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """One line per row when it fits; else the source, then the place too, go on a line below the numbers."""
        width = options.max_width
        numbers = 3 * (NUMBER_W + len(GAP))
        label_inline = width >= numbers + self.label_w
        inline = width - numbers - self.label_w - len(GAP) >= MIN_SOURCE_W
        yield Text("Hot lines, matched across edits (ms/step)", style="bold")
        header = Text("before".rjust(NUMBER_W) + GAP + "after".rjust(NUMBER_W) + GAP + "change".rjust(NUMBER_W) + GAP
                      + ("line".ljust(self.label_w) if label_inline else "line") + (GAP + "source" if inline else ""),
                      style="bold", no_wrap=True)
        header.rstrip()
        header.truncate(width, overflow="ellipsis")
        yield header
        indent = " " * (NUMBER_W + len(GAP))
        for row, label in zip(self.rows, self.labels):
            before, after = row["before"], row["after"]
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append((f"{before['ms_per_step']:.2f}" if before else "\u2014").rjust(NUMBER_W) + GAP)
            line.append((f"{after['ms_per_step']:.2f}" if after else "\u2014").rjust(NUMBER_W) + GAP)
            change = _change(row["delta_ms"], row["measurable"])
            change.pad_left(NUMBER_W - len(change.plain))
            line.append_text(change)
            source = (after or before or {}).get("source", "") or ""
            if label_inline:
                line.append(GAP + label.ljust(self.label_w))
                below = source
            else:
                below = label + (GAP + source if source else "")
            if inline:
                line.append(GAP + source)
                below = ""
            line.rstrip()
            line.truncate(width, overflow="ellipsis")
            yield line
            if below:
                rest = Text(indent + below, no_wrap=True, overflow="ellipsis")
                rest.truncate(width, overflow="ellipsis")
                yield rest


def render_comparison(c: dict[str, Any]) -> RenderableType:
    """The whole comparison as one rich Group."""
    before, after = c["before"], c["after"]
    parts: list[RenderableType] = []
    for warning in c["warnings"]:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    head = Text("Compared: ", style="bold")
    head.append(Path(before["run_dir"]).name)
    head.append(f" {ARROW} ")
    head.append(Path(after["run_dir"]).name)
    parts += [head, Text(c["verdict"]["text"], style=STYLE.get(c["verdict"]["change"], "bold")), Text(""), _numbers(c)]
    if c["lines"]:
        parts += [Text(""), LineDeltas(c)]
    fixed = [f for f in c["findings"] if f["status"] == "fixed"]
    new = [f for f in c["findings"] if f["status"] == "new"]
    if fixed or new:
        parts.append(Text(""))
    if fixed:
        parts.append(Text("Fixed: " + ", ".join(f"{f['code']} at {_where(f['before'])} (line {f['line_status']})" for f in fixed)))
    if new:
        parts.append(Text("New: " + ", ".join(f"{f['code']} at {_where(f['after'])}" for f in new)))
    notes = ["(\u2026): no measurable change"]
    if c["noise"].get("note"):
        notes.append(c["noise"]["note"])
    parts += [Text(""), *(Text(n, style="dim") for n in notes)]
    return Group(*parts)


def written_lines(written: Path) -> list[Text]:
    """Where the comparison went (print them with ``soft_wrap``: whole paths are copied from the terminal)."""
    return [
        Text(f"compare.json: {written}", style="dim"),
        Text(f"report.html:  {written.with_name('report.html')} (section \"Compared with\")", style="dim"),
    ]
