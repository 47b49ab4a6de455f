"""Inline SVG charts as strings: a 100 % stacked bar, labelled bars, a line chart.

No JavaScript, no external assets: every chart is a self-contained ``<svg>``
element with a ``<title>`` per mark so hovering shows the exact value.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from types import MappingProxyType
from typing import Sequence

COLORS = MappingProxyType(
    {
        "data_loading": "#e4572e",
        "host_sync": "#f3a712",
        "python_overhead": "#a8c686",
        "launch_overhead": "#8e5572",
        "compute": "#2e86ab",
        "optimizer": "#669bbc",
        "communication": "#29335c",
        "idle": "#c9c9c9",
        "memory": "#7b2cbf",
    }
)
FONT = "font-family='system-ui,-apple-system,Segoe UI,sans-serif' font-size='12'"
MONO = "font-family='ui-monospace,Menlo,Consolas,monospace' font-size='12'"


def color(category: str) -> str:
    return COLORS.get(category, "#888888")


def _text(x: float, y: float, text: str, anchor: str = "start", mono: bool = False, fill: str = "#222", weight: str = "normal") -> str:
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}' {MONO if mono else FONT} fill='{fill}' "
        f"font-weight='{weight}'>{escape(text)}</text>"
    )


def stacked_bar(parts: Sequence[tuple[str, float, str]], width: int = 760, height: int = 34) -> str:
    """One 100 % bar: ``parts`` are (category, share, label); legend underneath."""
    total = sum(max(0.0, s) for _, s, _ in parts) or 1.0
    x = 0.0
    rects = []
    for category, share, label in parts:
        w = width * max(0.0, share) / total
        if w <= 0:
            continue
        rects.append(
            f"<rect class='seg' data-category='{escape(category)}' x='{x:.2f}' y='0' width='{w:.2f}' height='{height}' "
            f"fill='{color(category)}'><title>{escape(category)}: {escape(label)}</title></rect>"
        )
        if w > 44:
            rects.append(_text(x + w / 2, height / 2 + 4, f"{share / total * 100:.0f}%", "middle", fill="#fff", weight="bold"))
        x += w
    legend, lx, ly = [], 0.0, height + 22
    for category, share, label in parts:
        if share <= 0:
            continue
        item = f"{category.replace('_', ' ')} {label}"
        step = 22 + 7 * len(item)
        if lx + step > width:
            lx, ly = 0.0, ly + 20
        legend.append(f"<rect x='{lx:.1f}' y='{ly - 10:.1f}' width='12' height='12' fill='{color(category)}'/>")
        legend.append(_text(lx + 16, ly, item))
        lx += step
    total_h = ly + 8
    return (
        f"<svg class='chart breakdown' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{total_h:.0f}' "
        f"viewBox='0 0 {width} {total_h:.0f}' role='img' aria-label='step time breakdown'>"
        + "".join(rects + legend)
        + "</svg>"
    )


@dataclass(frozen=True)
class Bar:
    """One row of a bar chart."""

    label: str  # e.g. train.py:45
    value: float  # drives the length (share)
    value_text: str  # e.g. "3.2 ms - 38%"
    category: str
    note: str = ""  # source snippet, shown under the label
    badges: tuple[str, ...] = ()  # static codes


def bar_chart(bars: Sequence[Bar], width: int = 760, label_w: int = 300, row_h: int = 40) -> str:
    """Horizontal bars with a label and source note on the left, badges after the value."""
    if not bars:
        return "<p class='empty'>No lines to show.</p>"
    top = max(b.value for b in bars) or 1.0
    avail = width - label_w - 190
    rows = []
    for i, b in enumerate(bars):
        y = i * row_h
        w = max(2.0, avail * b.value / top)
        note = b.note if len(b.note) <= 44 else b.note[:43] + "\u2026"
        rows.append(_text(0, y + 15, b.label, mono=True, weight="bold"))
        rows.append(_text(0, y + 31, note, mono=True, fill="#555"))
        rows.append(
            f"<rect class='bar' data-category='{escape(b.category)}' x='{label_w}' y='{y + 6}' width='{w:.1f}' "
            f"height='{row_h - 14}' rx='3' fill='{color(b.category)}'><title>{escape(b.label)}: {escape(b.value_text)} "
            f"({escape(b.category)})</title></rect>"
        )
        vx = label_w + w + 6
        rows.append(_text(vx, y + row_h / 2 + 3, b.value_text))
        bx = vx + 8 + 6.5 * len(b.value_text)
        for badge in b.badges:
            bw = 8 + 7 * len(badge)
            rows.append(f"<rect class='badge' x='{bx:.1f}' y='{y + 11}' width='{bw}' height='18' rx='9' fill='#fde2e1' stroke='#e4572e'/>")
            rows.append(_text(bx + bw / 2, y + 24, badge, "middle", fill="#b3261e", weight="bold"))
            bx += bw + 4
    h = row_h * len(bars)
    return (
        f"<svg class='chart hotlines' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{h}' "
        f"viewBox='0 0 {width} {h}' role='img' aria-label='hot lines'>" + "".join(rows) + "</svg>"
    )


def line_chart(
    series: Sequence[tuple[str, str, Sequence[float]]],
    x_labels: Sequence[str],
    unit: str,
    width: int = 760,
    height: int = 220,
    zero_based: bool = True,
) -> str:
    """Lines over steps: ``series`` are (name, color, values) sharing x positions.

    ``zero_based=False`` fits the y range to the data (with 10 % margins) so a
    slow drift, such as memory retained step after step, stays visible.
    """
    values = [v for _, _, vs in series for v in vs]
    if not values or len(x_labels) == 0:
        return "<p class='empty'>No data.</p>"
    left, right, top, bottom = 70, 20, 12, 40
    lo, hi = min(values), max(values)
    if hi - lo < 0.01 * max(abs(hi), abs(lo)):
        zero_based = True  # flat series: a fitted range would only magnify rounding
    if zero_based:
        lo = min(0.0, lo)
    else:
        pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    hi = hi if hi > lo else lo + 1.0
    n = len(x_labels)
    pw, ph = width - left - right, height - top - bottom

    def px(i: int) -> float:
        return left + (pw * i / (n - 1) if n > 1 else pw / 2)

    def py(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    parts = [f"<line x1='{left}' y1='{top + ph}' x2='{left + pw}' y2='{top + ph}' stroke='#999'/>"]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f"<line x1='{left}' y1='{py(v):.1f}' x2='{left + pw}' y2='{py(v):.1f}' stroke='#eee'/>")
        parts.append(_text(left - 6, py(v) + 4, f"{v:.3g} {unit}", "end"))
    stride = max(1, n // 10)
    for i in range(0, n, stride):
        parts.append(_text(px(i), top + ph + 16, x_labels[i], "middle"))
    for name, stroke, vs in series:
        pts = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(vs))
        parts.append(f"<polyline class='series' fill='none' stroke='{stroke}' stroke-width='2' points='{pts}'><title>{escape(name)}</title></polyline>")
        for i, v in enumerate(vs):
            parts.append(f"<circle cx='{px(i):.1f}' cy='{py(v):.1f}' r='3' fill='{stroke}'><title>{escape(name)} step {escape(x_labels[i])}: {v:.4g} {unit}</title></circle>")
    lx = left
    for name, stroke, _ in series:
        parts.append(f"<rect x='{lx}' y='{height - 14}' width='12' height='3' fill='{stroke}'/>")
        parts.append(_text(lx + 16, height - 9, name))
        lx += 30 + 7 * len(name)
    return (
        f"<svg class='chart lines' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{escape(unit)} over steps'>" + "".join(parts) + "</svg>"
    )
