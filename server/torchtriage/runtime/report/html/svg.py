"""Inline SVG charts as strings: a 100 % stacked bar, labelled bars, a line chart.

No JavaScript, no external assets: every chart is a self-contained ``<svg>``
element with a ``<title>`` per mark so hovering shows the exact value.  Text is
measured with ``text_width`` (an overestimate) so margins fit the widest label
and long labels are shortened rather than clipped or overlapping.
"""

from __future__ import annotations

import math
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
        # memory at the peak (html/device.py)
        "parameters": "#2e86ab",
        "gradients": "#669bbc",
        "optimizer_state": "#8e5572",
        "activations": "#e4572e",
        "other": "#c9c9c9",
    }
)
FONT = "font-family='system-ui,-apple-system,Segoe UI,sans-serif' font-size='12'"
MONO = "font-family='ui-monospace,Menlo,Consolas,monospace' font-size='12'"
FONT_PX = 12
# Advance widths in 1/1000 em of DejaVu Sans, the widest common fallback for system-ui:
# estimates from it are never short on narrower fonts (Segoe UI, SF, Cantarell).
_WIDTHS = {
    **dict.fromkeys("0123456789", 636), " ": 318, ".": 318, ",": 318, ":": 337, ";": 337, "-": 361, "_": 500,
    "+": 838, "=": 838, "<": 838, ">": 838, "#": 838, "%": 950, "(": 390, ")": 390, "/": 337, "\u00b7": 318,
    "\u2026": 1000, "\u00b2": 401, "'": 275, "\"": 460, "[": 390, "]": 390, "@": 1000, "&": 780, "*": 500,
    "a": 613, "b": 635, "c": 550, "d": 635, "e": 615, "f": 352, "g": 635, "h": 634, "i": 278, "j": 278, "k": 579,
    "l": 278, "m": 974, "n": 634, "o": 612, "p": 635, "q": 635, "r": 411, "s": 521, "t": 392, "u": 634, "v": 592,
    "w": 818, "x": 592, "y": 592, "z": 525, "I": 295, "J": 295, "M": 863, "W": 989,
}
_UPPER, _OTHER = 760, 1000
MONO_EM = {"normal": 0.61, "bold": 0.66}  # measured in headless Chromium: monospace bold is wider here


def text_width(text: str, mono: bool = False, weight: str = "normal") -> float:
    """Estimated rendered width in px of ``text`` at the charts' 12 px (an overestimate, not an underestimate)."""
    if mono:
        return len(text) * MONO_EM.get(weight, 0.66) * FONT_PX
    units = sum(_WIDTHS.get(ch, _UPPER if ch.isupper() else _OTHER) for ch in text)
    return units / 1000 * FONT_PX * (1.1 if weight == "bold" else 1.0)


def fit(text: str, px: float, mono: bool = False, weight: str = "normal", middle: bool = False) -> str:
    """``text`` shortened with an ellipsis (at the end, or in the middle) to fit ``px``."""
    if text_width(text, mono, weight) <= px:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest cut that fits
        mid = (lo + hi + 1) // 2
        if text_width(_cut(text, mid, middle), mono, weight) <= px:
            lo = mid
        else:
            hi = mid - 1
    return _cut(text, lo, middle)


def _cut(text: str, keep: int, middle: bool) -> str:
    if not middle:
        return text[:keep] + "\u2026"
    tail = (keep * 3) // 5  # keep the end (file name and line number) when cutting a path
    return text[: keep - tail] + "\u2026" + text[len(text) - tail :] if tail else text[:keep] + "\u2026"


def color(category: str) -> str:
    return COLORS.get(category, "#888888")


def _text(x: float, y: float, text: str, anchor: str = "start", mono: bool = False, fill: str = "#222", weight: str = "normal",
          title: str = "", cls: str = "") -> str:
    hover = f"<title>{escape(title)}</title>" if title and title != text else ""
    klass = f" class='{cls}'" if cls else ""
    return (
        f"<text{klass} x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}' {MONO if mono else FONT} fill='{fill}' "
        f"font-weight='{weight}'>{escape(text)}{hover}</text>"
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
        pct = f"{share / total * 100:.0f}%"
        if w > text_width(pct, weight="bold") + 8:
            rects.append(_text(x + w / 2, height / 2 + 4, pct, "middle", fill="#fff", weight="bold"))
        x += w
    legend, lx, ly = [], 0.0, height + 22
    for category, share, label in parts:
        if share <= 0:
            continue
        item = fit(f"{category.replace('_', ' ')} {label}", width - 16)
        step = 16 + text_width(item) + 14
        if lx > 0 and lx + step - 14 > width:
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
    title: str = ""  # hover text of the label (e.g. the full path)


def _badges_width(badges: Sequence[str]) -> float:
    return sum(_badge_w(b) + 4 for b in badges)


def _badge_w(badge: str) -> float:
    return text_width(badge, weight="bold") + 10


def bar_chart(bars: Sequence[Bar], width: int = 760, row_h: int = 40) -> str:
    """Horizontal bars with a label and source note on the left, badges after the value.

    The label column is as wide as the widest label (at most 45 % of the chart;
    longer labels are shortened in the middle, notes at the end, the full text
    on hover) and the value column as wide as the widest value with its badges.
    """
    if not bars:
        return "<p class='empty'>No lines to show.</p>"
    top = max(b.value for b in bars) or 1.0
    widest = max(max(text_width(b.label, True, "bold"), text_width(b.note, True)) for b in bars)
    label_w = min(widest, width * 0.45) + 12
    tail = max(6 + text_width(b.value_text) + (8 + _badges_width(b.badges) if b.badges else 0) for b in bars) + 4
    avail = max(40.0, width - label_w - tail)
    rows = []
    for i, b in enumerate(bars):
        y = i * row_h
        w = max(2.0, avail * b.value / top)
        label = fit(b.label, label_w - 12, mono=True, weight="bold", middle=True)
        note = fit(b.note, label_w - 12, mono=True)
        rows.append(_text(0, y + 15, label, mono=True, weight="bold", title=b.title or b.label))
        rows.append(_text(0, y + 31, note, mono=True, fill="#555", title=b.note))
        rows.append(
            f"<rect class='bar' data-category='{escape(b.category)}' x='{label_w:.1f}' y='{y + 6}' width='{w:.1f}' "
            f"height='{row_h - 14}' rx='3' fill='{color(b.category)}'><title>{escape(b.label)}: {escape(b.value_text)} "
            f"({escape(b.category)})</title></rect>"
        )
        vx = label_w + w + 6
        rows.append(_text(vx, y + row_h / 2 + 3, b.value_text))
        bx = vx + text_width(b.value_text) + 8
        for badge in b.badges:
            bw = _badge_w(badge)
            rows.append(f"<rect class='badge' x='{bx:.1f}' y='{y + 11}' width='{bw:.1f}' height='18' rx='9' fill='#fde2e1' stroke='#e4572e'/>")
            rows.append(_text(bx + bw / 2, y + 24, badge, "middle", fill="#b3261e", weight="bold"))
            bx += bw + 4
    h = row_h * len(bars)
    return (
        f"<svg class='chart hotlines' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{h}' "
        f"viewBox='0 0 {width} {h}' role='img' aria-label='hot lines'>" + "".join(rows) + "</svg>"
    )


def nice_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """At most ``most`` evenly spaced round values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    for count in range(max(1, most - 1), 0, -1):
        raw = (hi - lo) / count
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
        first = math.floor(lo / step + 1e-9) * step
        ticks = [first + k * step for k in range(int(math.ceil((hi - first) / step - 1e-9)) + 1)]
        if len(ticks) <= most:
            return ticks
    return [lo, hi]


def tick_text(value: float, ticks: Sequence[float]) -> str:
    """A tick value with as many decimals as the tick spacing needs, thousands separated."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(value) or 1.0
    decimals = next((d for d in range(9) if abs(step * 10**d - round(step * 10**d)) < 1e-6 * step * 10**d), 9)
    return f"{value:,.{decimals}f}" if abs(value) >= 1e-12 else "0"


def number(value: float) -> str:
    """A measured value for hover text: 4 significant digits, no exponent below 10^15."""
    if value == 0 or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}" if abs(value) >= 1e-4 else f"{value:.2e}"


def line_chart(
    series: Sequence[tuple[str, str, Sequence[float]]],
    x_labels: Sequence[str],
    unit: str,
    width: int = 760,
    height: int = 220,
    zero_based: bool = True,
    y_title: str = "",
    x_title: str = "step",
) -> str:
    """Lines over steps: ``series`` are (name, color, values) sharing x positions.

    The y axis is titled "``y_title`` (``unit``)" above it, its round tick values
    set the left margin; the x axis is titled ``x_title``; the legend is the last row.
    ``zero_based=False`` fits the y range to the data (with 10 % margins) so a
    slow drift, such as memory retained step after step, stays visible.
    """
    values = [v for _, _, vs in series for v in vs]
    if not values or len(x_labels) == 0:
        return "<p class='empty'>No data.</p>"
    lo, hi = min(values), max(values)
    if hi - lo < 0.01 * max(abs(hi), abs(lo)):
        zero_based = True  # flat series: a fitted range would only magnify rounding
    if zero_based:
        lo = min(0.0, lo)
    else:
        pad = (hi - lo) * 0.1 or abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    top, row = 26, 18  # top: the y axis title's row
    legend_rows = _legend_rows([name for name, _, _ in series], width)
    bottom = 6 + row * 2 + 20 * len(legend_rows)  # tick labels, x title, legend
    ph = max(40, height - top - bottom)
    height = top + ph + bottom
    ticks = nice_ticks(lo, hi, max(2, min(6, int(ph // 24) + 1)))
    lo, hi = ticks[0], ticks[-1]
    labels = [tick_text(v, ticks) for v in ticks]
    left = math.ceil(max(text_width(t) for t in labels) + 10)
    n = len(x_labels)
    x_widest = max(text_width(x) for x in x_labels)
    right = math.ceil(max(12.0, text_width(x_labels[-1]) / 2 + 4))
    pw = width - left - right

    def px(i: int) -> float:
        return left + (pw * i / (n - 1) if n > 1 else pw / 2)

    def py(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    title = f"{y_title} ({unit})" if y_title else unit
    parts = [_text(0, 14, fit(title, width), fill="#555", cls="axis-title")]
    parts.append(f"<line x1='{left}' y1='{top + ph}' x2='{left + pw}' y2='{top + ph}' stroke='#999'/>")
    for v, label in zip(ticks, labels):
        parts.append(f"<line x1='{left}' y1='{py(v):.1f}' x2='{left + pw}' y2='{py(v):.1f}' stroke='#eee'/>")
        parts.append(_text(left - 6, py(v) + 4, label, "end", cls="tick"))
    slot = pw / (n - 1) if n > 1 else pw
    stride = max(1, math.ceil((x_widest + 10) / slot)) if n > 1 else 1
    shown = list(range(0, n, stride))
    if n - 1 not in shown and (n - 1 - shown[-1]) * slot >= x_widest + 10:
        shown.append(n - 1)
    for i in shown:
        parts.append(_text(px(i), top + ph + 16, x_labels[i], "middle", cls="tick"))
    parts.append(_text(left + pw / 2, top + ph + 16 + row, x_title, "middle", fill="#555", cls="axis-title"))
    for name, stroke, vs in series:
        pts = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(vs))
        parts.append(f"<polyline class='series' fill='none' stroke='{stroke}' stroke-width='2' points='{pts}'><title>{escape(name)}</title></polyline>")
        for i, v in enumerate(vs):
            parts.append(f"<circle cx='{px(i):.1f}' cy='{py(v):.1f}' r='3' fill='{stroke}'><title>{escape(name)} {escape(x_title)} {escape(x_labels[i])}: {number(v)} {escape(unit)}</title></circle>")
    strokes = {name: stroke for name, stroke, _ in series}
    ly = top + ph + 16 + row * 2 + 4
    for names in legend_rows:
        lx = 0.0
        for name in names:
            parts.append(f"<rect x='{lx:.1f}' y='{ly - 5}' width='12' height='3' fill='{strokes[name]}'/>")
            parts.append(_text(lx + 16, ly, fit(name, width - 16)))
            lx += 16 + text_width(name) + 18
        ly += 20
    return (
        f"<svg class='chart lines' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{escape(title)} over {escape(x_title)}s'>" + "".join(parts) + "</svg>"
    )


def _legend_rows(names: Sequence[str], width: int) -> list[list[str]]:
    rows: list[list[str]] = [[]]
    used = 0.0
    for name in names:
        step = 16 + text_width(name) + 18
        if rows[-1] and used + step - 18 > width:
            rows.append([])
            used = 0.0
        rows[-1].append(name)
        used += step
    return rows
