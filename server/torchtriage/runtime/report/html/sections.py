"""The operator table and the run folder's files, as HTML fragments for report.html."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

OPERATOR_ROWS = 30
OP_NAME_CHARS = 90
LONG_LOC = 28


def where(path: str | None, line: int | None) -> str:
    return f"{Path(path).name}:{line}" if path and line else (Path(path).name if path else "")


def loc(path: str | None, line: int | None, source: str = "") -> str:
    """A file:line label whose tooltip is the full path (and the source line)."""
    tip = (path or "") + (f"\n{source}" if source else "")
    text = where(path, line)
    long = " class='long'" if len(text) > LONG_LOC else ""  # a long file name may break anywhere, a short one never
    return f"<code{long} title='{escape(tip)}'>{escape(text)}</code>"


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%" if share >= 0.001 else ("&lt;0.1%" if share > 0 else "0%")


def _ms(ms: float) -> str:
    return f"{ms:,.3f}" if ms < 10 else f"{ms:,.1f}"


def operators_html(r: dict[str, Any]) -> str:
    """Top operators by self time per step: calls, self and total time, share of the step, the calling line."""
    out = "<h2 id='operators'>Operators (time per step)</h2>"
    ops = r.get("operators")
    if ops is None:
        return out + "<p class='empty'>This report predates operator statistics; profile again to see them.</p>"
    if not ops:
        return out + "<p class='empty'>No operators were recorded inside the profiled steps.</p>"
    rows = []
    for o in ops[:OPERATOR_ROWS]:
        name = o["name"]
        shown = name if len(name) <= OP_NAME_CHARS else name[: OP_NAME_CHARS - 1] + "\u2026"
        device = "GPU kernel" if o["device"] == "cuda" else "CPU" + ("" if o["main_thread"] else " (other thread)")
        bar = min(100.0, o["self_share"] * 100)
        rows.append(
            f"<tr><td class='op' title='{escape(name)}'><code>{escape(shown)}</code></td><td>{device}</td>"
            f"<td class='num'>{o['calls_per_step']:,.4g}</td>"
            f"<td class='num'>{_ms(o['self_ms_per_step'])}</td><td class='num'>{_ms(o['total_ms_per_step'])}</td>"
            f"<td class='num share' style='background-image:linear-gradient(90deg,#2e86ab {bar:.1f}%,#e8eef2 {bar:.1f}%)'>"
            f"{_pct(o['self_share'])}</td>"
            f"<td class='from'>{loc(o['path'], o['line'], o['source']) if o['path'] else '<span class=empty>&mdash;</span>'}</td></tr>"
        )
    more = f" (top {OPERATOR_ROWS} of {len(ops)})" if len(ops) > OPERATOR_ROWS else ""
    return out + (
        "<table class='operators'><colgroup><col style='width:31%'><col style='width:10%'><col style='width:7%'>"
        "<col style='width:10%'><col style='width:10%'><col style='width:11%'><col style='width:21%'></colgroup>"
        "<thead><tr><th>operator</th><th>runs on</th>"
        "<th class='num' title='Calls per recorded step'>calls</th>"
        "<th class='num sorted' aria-sort='descending' title='Time in the operator itself, without the operators it calls'>self ms &#9660;</th>"
        "<th class='num' title='Time including the operators it calls (a call nested in one of the same name counts once)'>total ms</th>"
        "<th class='num' title='Self time as a share of the mean step'>self % of step</th>"
        "<th title='The user line with most of this operator&#39;s time'>called most from</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        f"<p class='caption'>Sorted by self time{more}. <strong>self</strong>: time in the operator itself; "
        "<strong>total</strong>: including the operators it calls, so totals nest and do not add up. Times and calls are "
        "per step (mean over the recorded steps). GPU kernel rows are device time and overlap the CPU rows; "
        "&ldquo;other thread&rdquo; rows (e.g. the autograd engine's device threads) overlap the main thread.</p>"
    )


SCHEMA_DOC = (Path(__file__).resolve().parent.parent / "REPORT_SCHEMA.md")  # the one copy of report.json's contract
FILE_HELP = {
    "trace": "Chrome trace of the recorded steps: open it in Perfetto (ui.perfetto.dev, &ldquo;Open trace file&rdquo;) or chrome://tracing.",
    "tensorboard": "TensorBoard logdir for the PyTorch Profiler plugin: run <code>tensorboard --logdir {path}</code> (needs torch-tb-profiler).",
    "report": "This report as JSON, for scripts and CI (its fields: <a href='{schema}'>REPORT_SCHEMA.md</a>, "
              "installed with torchtriage).",
    "profile": "The attributed data this report is built from (per-line time, syncs, memory, operators).",
    "output": "The script's own output (stdout and stderr) during the run.",
    "agent": "Raw records from the profiling agent inside the script (steps, charges, allocations, operator stats).",
    "snapshot": "CUDA memory snapshot: drag it onto pytorch.org/memory_viz.",
}


def base_dir(r: dict[str, Any]) -> Path | None:
    """The run folder, inferred from the files report.json names (report.html is written there)."""
    t = r.get("trace", {})
    for key in ("profile", "agent_json", "output_log"):
        if t.get(key):
            return Path(t[key]).parent
    return None


def href(path: str, base: Path | None, folder: bool = False) -> str:
    """A link to ``path``: relative to ``base`` when inside it (so the run folder can be moved), else a file URI."""
    target = Path(path)
    suffix = "/" if folder else ""
    if base is not None:
        try:
            rel = target.resolve().relative_to(base.resolve())
            return quote(rel.as_posix()) + suffix
        except ValueError:
            pass
    if target.is_absolute():
        return target.as_uri() + suffix
    return quote(os.path.abspath(path)) + suffix


def _shown_name(path: str, base: Path | None) -> str:
    """The file's path inside the run folder (``rank1/trace.json.gz`` for a rank's), else its name."""
    if base is not None:
        try:
            return Path(path).resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return Path(path).name


def files_html(r: dict[str, Any], base: Path | None) -> str:
    """The run folder's files as links, each with what it is and what to open it with."""
    t = r.get("trace", {})
    entries: list[tuple[str, str, bool]] = [(p, "trace", False) for p in t.get("chrome_traces", [])]
    if t.get("tensorboard_logdir"):
        entries.append((t["tensorboard_logdir"], "tensorboard", True))
    entries.append(("", "report", False))  # report.json is always written beside report.html
    for key, kind in (("profile", "profile"), ("output_log", "output"), ("agent_json", "agent"), ("memory_snapshot", "snapshot")):
        if t.get(key):
            entries.append((t[key], kind, False))
    rows = []
    for path, kind, folder in entries:
        link, name = (href(path, base, folder), _shown_name(path, base) + ("/" if folder else "")) if path else ("report.json", "report.json")
        rows.append(
            f"<tr><td><a href='{escape(link)}' title='{escape(path or name)}'><code>{escape(name)}</code></a></td>"
            f"<td>{FILE_HELP[kind].format(path=escape(path), schema=escape(SCHEMA_DOC.as_uri()))}</td></tr>"
        )
    return f"<h2 id='files'>Files of this run</h2><table class='files'>{''.join(rows)}</table>"
