"""The "Compared with <run>" section of report.html, from a compare.json document."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .sections import href, loc

LINE_ROWS = 10
MIB = 2**20
CHANGE_COLORS = {"faster": "#2a9d4a", "slower": "#b3261e", "none": "#777"}


def _ms(x: float) -> str:
    return f"{x:,.2f}"


def _signed(x: float, unit: str = "", digits: int = 2) -> str:
    return ("+" if x > 0 else "\u2212" if x < 0 else "\u00b1") + f"{abs(x):,.{digits}f}{unit}"


def _change_cell(delta: float, measurable: bool, unit: str = " ms", digits: int = 2, say: bool = False) -> str:
    """The change, bold when measurable, else dim in parentheses (``say``: with the words)."""
    if measurable:
        return f"<td class='num'><strong>{_signed(delta, unit, digits)}</strong></td>"
    words = " no measurable change" if say else ""
    return f"<td class='num empty' title='no measurable change'>({_signed(delta, unit, digits)}){words}</td>"


def _summary_rows(c: dict[str, Any]) -> str:
    step = c["step_time"]
    rows = [
        "<tr><td>step time (ms)</td>"
        f"<td class='num'>{_ms(step['before_ms'])} <span class='caption'>(spread {step['before_spread_ms']:.2f})</span></td>"
        f"<td class='num'>{_ms(step['after_ms'])} <span class='caption'>(spread {step['after_spread_ms']:.2f})</span></td>"
        + _change_cell(step["delta_ms"], step["measurable"], say=True) + "</tr>"
    ]
    for row in c["categories"]:
        if max(row["before_share"], row["after_share"]) < 0.005:
            continue
        rows.append(
            f"<tr><td>{escape(row['category'].replace('_', ' '))}</td>"
            f"<td class='num'>{row['before_share'] * 100:.0f}% &middot; {_ms(row['before_ms'])} ms</td>"
            f"<td class='num'>{row['after_share'] * 100:.0f}% &middot; {_ms(row['after_ms'])} ms</td>"
            + _change_cell(row["delta_share"] * 100, row["measurable"], " pts", 0 if abs(row["delta_share"]) >= 0.01 else 1) + "</tr>"
        )
    for key, label in (("ops_per_step", "ops per step"), ("kernels_per_step", "GPU kernels per step")):
        n = c["counts"][key]
        if n["before"] or n["after"]:
            rows.append(f"<tr><td>{label}</td><td class='num'>{n['before']:,.1f}</td><td class='num'>{n['after']:,.1f}</td><td class='num'>{_signed(n['delta'], '', 1)}</td></tr>")
    peak = c["memory"]["peak_bytes"]
    rows.append(
        f"<tr><td>peak memory (MiB)</td><td class='num'>{peak['before'] / MIB:,.2f}</td><td class='num'>{peak['after'] / MIB:,.2f}</td>"
        f"<td class='num'>{_signed(peak['delta'] / MIB)}</td></tr>"
    )
    return "".join(rows)


def _side(side: dict[str, Any] | None) -> str:
    if side is None:
        return "<span class='empty'>not in this run</span>"
    text = loc(side["path"], side["line"], side["source"])
    return text + ("" if side["hot"] else " <span class='empty'>(not hot)</span>")


def _line_rows(c: dict[str, Any]) -> str:
    rows = []
    for row in c["lines"][:LINE_ROWS]:
        before, after = row["before"], row["after"]
        source = (after or before or {}).get("source", "")
        rows.append(
            f"<tr><td>{_side(before)}</td><td>{_side(after)}</td><td>{escape(row['match'])}</td>"
            f"<td class='num'>{_ms(before['ms_per_step']) if before else '&mdash;'}</td>"
            f"<td class='num'>{_ms(after['ms_per_step']) if after else '&mdash;'}</td>"
            + _change_cell(row["delta_ms"], row["measurable"])
            + f"<td><code>{escape(source)}</code></td></tr>"
        )
    return "".join(rows)


def _link(path: str, base: Path | None) -> str:
    """Relative to this run's folder (runs are usually siblings, and move together), else a file URI."""
    if base is None:
        return href(path, None)
    return quote(Path(os.path.relpath(path, base)).as_posix())


def comparison_html(c: dict[str, Any], base: Path | None) -> str:
    """The section: the verdict, before/after numbers, the matched hot lines, and what was fixed."""
    before = c["before"]
    verdict = c["verdict"]
    color = CHANGE_COLORS.get(verdict["change"], "#777")
    link = _link(str(Path(before["report"]).with_name("report.html")), base)
    out = (
        f"<h2 id='compare'>Compared with <a href='{escape(link)}'><code>{escape(Path(before['run_dir']).name)}</code></a></h2>"
        f"<section class='card verdict compare' style='--kind-color:{color}'><div>{escape(verdict['text'])}</div></section>"
    )
    warnings = "".join(f"<li>{escape(w)}</li>" for w in c["warnings"])
    if warnings:
        out += f"<ul class='evidence'>{warnings}</ul>"
    out += (
        "<table class='compare'><tr><th></th><th class='num'>before</th><th class='num'>after (this run)</th>"
        f"<th class='num'>change</th></tr>{_summary_rows(c)}</table>"
    )
    if c["lines"]:
        out += (
            "<h3>Hot lines, matched across edits (ms per step)</h3><table class='compare-lines'>"
            "<colgroup><col style='width:14%'><col style='width:14%'><col style='width:8%'><col style='width:8%'>"
            "<col style='width:8%'><col style='width:11%'><col style='width:37%'></colgroup><tr><th>before</th><th>after</th>"
            f"<th>match</th><th class='num'>before</th><th class='num'>after</th><th class='num'>change</th><th>source</th></tr>"
            f"{_line_rows(c)}</table>"
        )
    fixed = [f for f in c["findings"] if f["status"] != "kept"]
    if fixed:
        items = "".join(
            f"<li><span class='code'>{escape(f['code'])}</span> {escape(f['status'])} "
            + (loc(f["before"]["path"], f["before"]["line"]) if f["before"] else loc(f["after"]["path"], f["after"]["line"]))
            + (f" (line {escape(f['line_status'])})" if f["line_status"] else "")
            + "</li>"
            for f in fixed
        )
        out += f"<h3>Static findings</h3><ul class='evidence'>{items}</ul>"
    noise = c["noise"]
    note = (
        f"Spread: before {noise['before']['spread_ms']:.2f} ms ({'range over ' + str(noise['before']['runs']) + ' runs' if noise['before']['source'] == 'repeats' else 'IQR of its steps'}), "
        f"after {noise['after']['spread_ms']:.2f} ms ({'range over ' + str(noise['after']['runs']) + ' runs' if noise['after']['source'] == 'repeats' else 'IQR of its steps'}). "
        "No measurable change is shown dim, in parentheses."
    )
    interval = c["step_time"].get("interval")
    if interval is not None:
        note = (f"The step time changed by {interval['low_ms']:+.2f} to {interval['high_ms']:+.2f} ms "
                f"({interval['confidence']:.0%} interval over {interval['steps']['before']} and {interval['steps']['after']} steps, "
                f"blocks of {interval['block_steps']['before']} and {interval['block_steps']['after']}); a change is called when the "
                "whole interval lies beyond 5% of the step. ") + note
    if noise.get("note"):
        note += " " + noise["note"][0].upper() + noise["note"][1:] + "."
    return out + f"<p class='caption'>{escape(note)} Details: compare.json in this folder.</p>"
