"""lab.json document -> lab.html: one self-contained page (inline CSS and SVG, no network).

The reading first, then step time per configuration as bars (median) with
the spread drawn as an interval, the full table, what went wrong in the
failed rows, and each run's folder.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from string import Template
from typing import Any

from ..report.html.render import TEMPLATE_PATH
from ..report.html.svg import FONT, fit, nice_ticks, text_width, tick_text

COLORS = {"fp32": "#8d99ae", "bf16": "#2e86ab", "fp16": "#f3a712"}
COMPILED = "#8e5572"
MIB = 2**20
STYLE = (
    "<style>.reading li{margin:6px 0}table.lab{font-size:12px}table.lab .status{color:#555;font-size:11px}"
    ".status-failed .status,.status-not_run .status{color:#b3261e;font-weight:600}.status-skipped{color:#777}</style>"
)


def _mib(value: Any) -> str:
    return "" if value is None else f"{value / MIB:,.1f} MiB"


def _fmt(value: Any, spec: str, suffix: str = "") -> str:
    return "" if value is None else f"{value:{spec}}{suffix}"


def interval_chart(rows: list[dict[str, Any]], width: int = 760, row_h: int = 34) -> str:
    """Median step time as a bar per configuration, the spread as a line with caps; rows without numbers say why."""
    timed = [r["step_time_ms"]["high"] for r in rows if r.get("step_time_ms")]
    top = max(timed, default=1.0) * 1.08 or 1.0
    ticks = nice_ticks(0.0, top)
    top = max(top, ticks[-1])
    label_w = max(text_width(r["name"], weight="bold") for r in rows) + 14
    value_w = 150.0
    plot_w = max(80.0, width - label_w - value_w)
    x = lambda v: label_w + plot_w * v / top  # noqa: E731
    parts = []
    axis_y = row_h * len(rows) + 4
    for tick in ticks:
        parts.append(f"<line x1='{x(tick):.1f}' y1='0' x2='{x(tick):.1f}' y2='{axis_y}' stroke='#eee'/>")
        parts.append(f"<text x='{x(tick):.1f}' y='{axis_y + 14}' text-anchor='middle' {FONT} fill='#555'>{escape(tick_text(tick, ticks))}</text>")
    for i, row in enumerate(rows):
        y = i * row_h
        parts.append(f"<text x='0' y='{y + row_h / 2 + 4:.1f}' {FONT} font-weight='bold'>{escape(row['name'])}<title>{escape(row['description'])}</title></text>")
        stats = row.get("step_time_ms")
        if not stats:
            why = fit(f"{row['status'].replace('_', ' ')}: {row['reason'] or ''}", plot_w + value_w - 8)
            parts.append(f"<text x='{label_w:.1f}' y='{y + row_h / 2 + 4:.1f}' {FONT} fill='#b3261e'>{escape(why)}<title>{escape(row['message'])}</title></text>")
            continue
        fill = COMPILED if row["compile_mode"] else COLORS.get(row["precision"], "#888")
        title = f"{row['name']}: median {stats['median']:.3f} ms, IQR {stats['q1']:.3f}–{stats['q3']:.3f} ms, spread {stats['low']:.3f}–{stats['high']:.3f} ms"
        parts.append(
            f"<rect class='bar' data-config='{escape(row['name'])}' x='{label_w:.1f}' y='{y + 7}' width='{max(1.0, x(stats['median']) - label_w):.1f}' "
            f"height='{row_h - 14}' rx='3' fill='{fill}' opacity='{0.55 if row['status'] == 'failed' else 0.9}'><title>{escape(title)}</title></rect>"
        )
        mid = y + row_h / 2
        lo, hi = x(stats["low"]), x(stats["high"])
        parts.append(f"<line class='spread' x1='{lo:.1f}' y1='{mid:.1f}' x2='{hi:.1f}' y2='{mid:.1f}' stroke='#222' stroke-width='1.5'/>")
        for cap in (lo, hi):
            parts.append(f"<line x1='{cap:.1f}' y1='{mid - 6:.1f}' x2='{cap:.1f}' y2='{mid + 6:.1f}' stroke='#222' stroke-width='1.5'/>")
        label = f"{stats['median']:.2f} ms" + (f" · {row['speedup_vs_fp32']:.2f}×" if row.get("speedup_vs_fp32") else "")
        parts.append(f"<text x='{max(hi, x(stats['median'])) + 6:.1f}' y='{mid + 4:.1f}' {FONT}>{escape(label)}</text>")
    parts.append(f"<text x='{label_w + plot_w / 2:.1f}' y='{axis_y + 30}' text-anchor='middle' {FONT} fill='#555'>ms per step</text>")
    height = axis_y + 36
    return (
        f"<svg class='chart lab' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
        f"role='img' aria-label='step time per configuration'>{''.join(parts)}</svg>"
        "<p class='caption'>Bars: median ms per step; line: the spread (interquartile range, and the runs' medians with --repeat). "
        "Spreads that overlap mean no measurable change.</p>"
    )


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("configuration", "median ms (IQR)", "vs fp32", "samples/s", "peak memory", "compile s", "breaks / recompiles",
            "output", "final loss")
    body = []
    for r in rows:
        s = r.get("step_time_ms")
        median = f"{s['median']:.2f} ({s['q1']:.2f}–{s['q3']:.2f})" if s else ""
        vs = f"{r['speedup_vs_fp32']:.2f}× ({r['change_vs_fp32'].replace('_', ' ')})" if r.get("speedup_vs_fp32") else ""
        breaks = f"{r['graph_breaks']} / {r['recompiles']}" if r.get("graph_breaks") is not None else ""
        loss = "" if r["final_loss"] is None else f"{r['final_loss']:.4g} ({r['loss_check'].replace('_', ' ')})"
        if r["loss_check"] == "not_finite":
            loss = "NaN or inf"
        status = r["status"].replace("_", " ") + (f": {r['reason']}" if r["reason"] else "")
        name = f"<code>{escape(r['name'])}</code><div class='status'>{escape(status)}</div>"
        cells = (median, vs, _fmt(r["samples_per_s"], ",.0f"), _mib(r["peak_memory_bytes"]), _fmt(r["compile_s"], ".1f"), breaks,
                 r["output_dtype"] or "", loss)
        body.append(f"<tr class='status-{escape(r['status'])}'><td>{name}</td>" + "".join(f"<td class='num'>{escape(str(c))}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table class='lab'><tr>{header}</tr>{''.join(body)}</table>"


def _details(rows: list[dict[str, Any]], lab_dir: Path) -> str:
    items = []
    for r in rows:
        lines = ([f"<strong>{escape(r['message'])}</strong>"] if r["message"] else []) + [escape(n) for n in r["notes"]]
        links = " ".join(
            f"<a href='{escape(os.path.relpath(run['run_dir'], lab_dir))}/output.log'>output.log (run {run['repeat']})</a>"
            for run in r["runs"]
        )
        if lines or links:
            items.append(f"<li><code>{escape(r['name'])}</code> — {escape(r['description'])}<br>{'<br>'.join(lines)}{'<br>' if lines and links else ''}{links}</li>")
    return f"<h2>Per configuration</h2><ul>{''.join(items)}</ul>" if items else ""


def render_lab_html(document: dict[str, Any], lab_dir: Path) -> str:
    """The whole page for one lab.json document (links relative to ``lab_dir``)."""
    d, settings = document, document["settings"]
    meta = [f"device: {d['device'] or '?'}" + (f" ({d['device_name']})" if d.get("device_name") else ""),
            f"torch {d['torch_version'] or '?'}", f"{settings['warmup']} warm-up + {settings['steps']} measured steps",
            f"seed {settings['seed']}", f"{settings['repeat']} run(s) each", f"loss tolerance {settings['loss_tolerance']:g}"]
    header = (f"<h1>Lab: {escape(Path(d['script']).name)}</h1><div class='meta'>"
              + "".join(f"<span>{escape(m)}</span>" for m in meta) + "</div>")
    lines = "".join(f"<li data-key='{escape(line['key'])}'>{escape(line['text'])}</li>" for line in d["reading"]["lines"])
    reading = f"<section class='card verdict reading'><h3>Reading</h3><ul class='evidence'>{lines or '<li>No comparison possible.</li>'}</ul></section>"
    body = "".join([
        STYLE, header, reading, "<h2>Step time per configuration</h2>", interval_chart(d["rows"]),
        "<h2>Table</h2>", _table(d["rows"]), _details(d["rows"], lab_dir),
        f"<footer><div>{escape(d['generated_by'])} &middot; lab schema {escape(d['schema_version'])} &middot; "
        f"<a href='lab.json'>lab.json</a></div></footer>",
    ])
    page = Template(TEMPLATE_PATH.read_text(encoding="utf-8"))
    return page.substitute(title=escape(f"torchtriage lab: {Path(d['script']).name}"), generator=escape(d["generated_by"]), body=body)
