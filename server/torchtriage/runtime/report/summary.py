"""The short terminal summary ``torchtriage profile`` prints: a rich renderable.

Built from the report.json document only: verdict and step time, the
breakdown, the top five lines (or, in a trace without stacks, the top
ranges), the top GPU kernels, the first fixes, and where the run folder is.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from .device_lines import device_lines
from .device_tables import kernels_table, ranges_table

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


def _verdict_lines(report: dict[str, Any]) -> list[Text]:
    b = report["bottleneck"]
    kind = b["kind"]
    text = Text("Bottleneck: ", style="bold")
    text.append(KIND_TITLES.get(kind, kind), style=f"bold {STYLES.get(kind, 'red')}")
    if kind == "memory_growth":
        growth = report["memory"]["growth_bytes_per_step"] / 2**20
        text.append(f"  (+{growth:.2f} MiB per step)")
    elif kind != "none":
        text.append(f"  ({b['share'] * 100:.0f}% of step time)")
    times = report.get("step_times_ms") or [0.0]
    steps = Text(f"  step {report['step_time_ms']:.2f} ms mean over {report['steps_profiled']} steps on {report['device']}")
    if len(times) > 1 and max(times) > 1.5 * min(times):
        steps.append(f" (they vary {min(times):.0f}\u2013{max(times):.0f} ms)")
    window = report.get("window") or {}
    if window.get("half_width") is not None:
        steps.append(f", mean known to \u00b1{window['half_width']:.0%}")
    lines = [text, steps]
    busy = report.get("gpu_busy")  # torchtriage analyze of a CUDA trace
    if busy:
        lines.append(Text(f"  GPU busy {busy['share']:.0%} of the step time (kernels, copies and memsets inside each ProfilerStep)"))
    source = report.get("source")
    if source:
        rank = f" (rank {source['rank']})" if source.get("rank") is not None else ""
        lines.append(Text(f"  analysed from the trace {source['path']}{rank}", style="dim"))
    repeats = report.get("repeats")
    if repeats and repeats["count"] > 1:
        spread = repeats["step_time_ms"]
        lines.append(Text(
            f"  the median of {repeats['count']} runs (run {repeats['kept']}); their mean steps "
            f"{spread['min']:.2f}\u2013{spread['max']:.2f} ms"
        ))
    return lines


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


NUMBER_W = 8  # "12345.67"
SHARE_W = 5  # " 100%"
CATEGORY_W = 15  # "python overhead"
GAP = "  "
MIN_SOURCE_W = 40  # narrower than this, the source goes on its own line under the numbers


class HotLines:
    """The top lines as a renderable that lays itself out for the console's width.

    Numbers come first and are never cut; the source text is the one thing that is
    truncated (with an ellipsis).  When the numbers leave too little room for the
    source, each entry takes two lines, the source indented under its numbers.
    Every piece is a ``Text``: source lines such as ``self.data[index]`` are not markup."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.spots = report["hotspots"][:TOP_LINES]
        hidden = {k["code"] for k in report["static_findings"] if not k.get("applies_on_this_device", True)}
        self.codes = [",".join(c for c in h["static_codes"] if c not in hidden) for h in self.spots]
        self.label_w = max([len("line")] + [len(_where(h["path"], h["line"])) for h in self.spots])
        self.static_w = max([0] + [len(c) for c in self.codes])
        if self.static_w:
            self.static_w = max(self.static_w, len("static"))

    def _fixed(self) -> list[tuple[str, int, str]]:
        columns = [("ms/step", NUMBER_W, "right"), ("share", SHARE_W, "right"), ("line", self.label_w, "left"), ("category", CATEGORY_W, "left")]
        if self.static_w:
            columns.append(("static", self.static_w, "left"))
        return columns

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        columns = self._fixed()
        fixed = sum(w for _, w, _ in columns) + len(GAP) * len(columns)
        inline = width - fixed >= MIN_SOURCE_W
        yield Text(f"Top {len(self.spots)} lines", style="bold")
        header = Text(no_wrap=True, overflow="ellipsis")
        for name, w, align in columns:
            header.append((name.rjust(w) if align == "right" else name.ljust(w)) + GAP)
        if inline:
            header.append("source")
        header.rstrip()
        header.stylize("bold")
        header.truncate(width, overflow="ellipsis")
        yield header
        for h, codes in zip(self.spots, self.codes):
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(f"{h['self_ms_per_step']:.2f}".rjust(NUMBER_W) + GAP)
            row.append(f"{h['share'] * 100:.0f}%".rjust(SHARE_W) + GAP)
            row.append(_where(h["path"], h["line"]).ljust(self.label_w) + GAP)
            row.append(h["category"].replace("_", " ").ljust(CATEGORY_W), style=STYLES.get(h["category"], "white"))
            row.append(GAP)
            if self.static_w:
                row.append(codes.ljust(self.static_w), style="bold red")
                row.append(GAP)
            source = Text(h.get("source", "") or "", no_wrap=True, overflow="ellipsis")
            if inline:
                row.append_text(source)
                row.truncate(width, overflow="ellipsis")
                yield row
            else:
                row.rstrip()
                yield row
                if source.plain:
                    indent = " " * (NUMBER_W + len(GAP))
                    source = Text(indent) + source
                    source.truncate(width, overflow="ellipsis")
                    yield source


def _artefacts(run_dir: Path) -> list[RenderableType]:
    """Every file the run folder holds, with what to open it with."""
    lines: list[RenderableType] = [Text(f"\nRun folder: {run_dir}", style="bold")]
    present = [(name, what) for name, what in ARTEFACTS if (run_dir / name.rstrip("/")).exists()]
    width = max([0] + [len(name) for name, _ in present])
    for name, what in present:
        line = Text(f"  {name.ljust(width)}  ", style="dim")
        line.append(what.format(path=run_dir / name.rstrip("/")), style="dim")
        lines.append(line)
    return lines


ARTEFACTS = (
    ("report.html", "the report: open it in a browser"),
    ("report.json", "the report as data (a stable schema)"),
    ("trace.json.gz", "Chrome trace: open it at ui.perfetto.dev"),
    ("tb/", "TensorBoard logdir: tensorboard --logdir {path}"),
    ("profile.json", "attributed data the report is built from"),
    ("agent.json", "raw records from the profiled process"),
    ("output.log", "the script's own output"),
)


def _side_notes(report: dict[str, Any]) -> list[RenderableType]:
    """Verdicts too noisy to call, and CUDA-only findings that cost nothing on this device."""
    parts: list[RenderableType] = []
    for w in report.get("withheld_verdicts", [])[:3]:
        parts.append(Text(f"  Not called: {w['reason']}", style="dim"))
    elsewhere = [k for k in report["static_findings"] if not k.get("applies_on_this_device", True)]
    seen: dict[str, list[str]] = {}
    for k in elsewhere:
        seen.setdefault(k["code"], []).append(_where(k["path"], k["line"]))
    if seen:
        listed = "; ".join(f"{code} at {', '.join(dict.fromkeys(places))}" for code, places in seen.items())
        parts.append(Text(f"  On a GPU these would also matter (no cost on this {report['device']} run): {listed}", style="dim"))
    return parts


COMPILE_CODES = ("TTR501", "TTR502", "TTR503")
MORE_FINDINGS = 5


def compile_and_dtype_lines(report: dict[str, Any]) -> list[RenderableType]:
    """torch.compile's totals (compile time is not step time), then the TTR5xx findings, each with its first fix."""
    parts: list[RenderableType] = []
    compiled = report.get("compile")
    if compiled:
        text = (
            f"torch.compile: {compiled['compiles']} compiles in {compiled['compile_time_s']:.2f} s (not counted as step time"
            + (f"; {compiled['compile_ms_in_window']:.0f} ms fell inside the recorded steps" if compiled["compile_ms_in_window"] else "")
            + f"), {compiled['recompiles']} recompiles, {compiled['graph_breaks']} graph breaks"
            + ("; the recompile limit was hit" if compiled["recompile_limit_hit"] else "")
        )
        parts.append(Text(text, style="bold"))
    findings = [f for f in report["runtime_findings"] if f["code"] in COMPILE_CODES]
    last_fix = ""
    for f in findings[:MORE_FINDINGS]:
        parts.append(Text(f"  {f['code']} {_where(f['path'], f['line'])}: {f['message']}", style="magenta"))
        fix = (f.get("recommendations") or [{}])[0].get("action", "")
        if fix and fix != last_fix:
            parts.append(Text(f"    fix: {fix}", style="dim"))
        last_fix = fix
    if len(findings) > MORE_FINDINGS:
        parts.append(Text(f"  ... and {len(findings) - MORE_FINDINGS} more in report.html", style="dim"))
    return [Text("")] + parts if parts else []


def render_summary(report: dict[str, Any], run_dir: Path | str | None = None) -> RenderableType:
    """Verdict, breakdown, top lines, first fixes and the run folder, as one rich Group."""
    parts: list[RenderableType] = []
    status = report["status"]
    if status["status"] not in ("completed", "stopped_after_window"):
        parts.append(Text(f"Run {status['status']}: {status['message']}", style="bold red"))
    parts += _verdict_lines(report)
    for e in report["bottleneck"]["evidence"][:3]:
        parts.append(Text(f"  \u2022 {e['text']}"))
    if report["steps_profiled"]:
        parts += [Text(""), _breakdown(report)]
    ranges = ranges_table(report)  # a trace without stacks: its ranges stand in for the lines it cannot name
    if report["hotspots"] and ranges is None:
        parts += [Text(""), HotLines(report)]
    for table in (ranges, kernels_table(report)):
        if table is not None:
            parts += [Text(""), table]
    recs = report["bottleneck"]["recommendations"][:3]
    if recs:
        parts.append(Text("\nTry first:", style="bold"))
        parts += [Text(f"  {i}. {r['action']}") for i, r in enumerate(recs, 1)]
    extra = [f for f in report["runtime_findings"] if f["severity"] == "warning" and f["code"] not in COMPILE_CODES]
    for f in extra[:3]:
        parts.append(Text(f"  {f['code']} {_where(f['path'], f['line'])}: {f['message']}", style="magenta"))
    parts += compile_and_dtype_lines(report)
    notes = device_lines(report) + _side_notes(report)
    if notes:
        parts += [Text("")] + notes
    if run_dir is not None:
        parts += _artefacts(Path(run_dir))
    return Group(*parts)
