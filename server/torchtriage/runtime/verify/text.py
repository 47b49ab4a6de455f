"""``fix --verify`` in the terminal: a rich renderable from a verify.json document only.

The baseline first, then each fix (before -> after, the change with its 95 %
interval, whether the loss moved), then what was kept and the diff (or
that it was written).  A fix whose change is not measurable is printed dim,
in parentheses, as ``torchtriage compare`` prints it.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from ..compare.verdict import interval_text

STYLE = {"faster": "bold green", "slower": "bold red", "none": "bold", "failed": "bold red"}
WORD = {"faster": "faster", "slower": "slower", "none": "no measurable change", "failed": "failed"}


def _ms(value: Any) -> str:
    return f"{value:.2f} ms" if isinstance(value, (int, float)) else "\u2014"


def _change(fix: dict[str, Any]) -> Text:
    change = fix["change"]
    if change == "failed":
        return Text(f"failed: {fix.get('message') or 'the fixed script did not record its steps'}", style=STYLE["failed"])
    pct = fix.get("delta_pct") or 0.0
    words = f"{WORD[change]} ({pct:+.1f}%, \u00d7{fix.get('speedup') or 0:.2f})"
    return Text(words, style=STYLE[change]) if change != "none" else Text(f"({words})", style="dim")


def _loss(fix: dict[str, Any]) -> Text:
    losses = fix.get("losses")
    if not losses or losses.get("max_relative_diff") is None:
        return Text("\u2014", style="dim")
    if losses["changed"]:
        return Text(f"changed ({losses['max_relative_diff']:.1e})", style="bold yellow")
    return Text(f"same ({losses['compared']} passes)", style="dim")


def _rows(fixes: list[dict[str, Any]]) -> list[RenderableType]:
    """Two or three lines per fix: what it does and where; before -> after and the call; the interval."""
    out: list[RenderableType] = []
    for fix in fixes:
        where = f" (line {fix['line']})" if fix.get("line") else ""
        head = Text(f"{fix['code']}{where}: ", style="bold")
        head.append(Text(fix["title"], style="default"))
        out.append(head)
        body = Text(f"  {_ms(fix.get('before_ms'))} \u2192 {_ms(fix.get('after_ms'))}  ")
        body.append(_change(fix))
        body.append("  loss: ")
        body.append(_loss(fix))
        out.append(body)
        if fix.get("interval"):
            out.append(Text(f"  {interval_text(fix['interval'])}", style="dim"))
    return out


def render_verification(document: dict[str, Any]) -> RenderableType:
    """The verification as printed by ``torchtriage fix --verify``."""
    base = document["baseline"]
    parts: list[RenderableType] = []
    if base.get("step_time_ms") is None or base.get("status") not in (None, "completed", "stopped_after_window"):
        parts.append(Text(f"The script as it is did not record its steps ({base.get('status')}: {base.get('message')}): "
                          "nothing to measure the fixes against.", style="bold red"))
        return Group(*parts)
    parts.append(Text(f"Baseline: {_ms(base['step_time_ms'])} per step over {base['steps_profiled']} steps, "
                      f"{document['repeat']} run(s) per version, seed {document['seed']}; bottleneck: {base['bottleneck']}", style="bold"))
    rows = list(document["fixes"]) + ([document["combined"]] if document.get("combined") else [])
    if not rows:
        parts.append(Text("No fix to verify: the script has no quick fix and no runtime advice with a mechanical edit."))
        return Group(*parts)
    parts.extend(_rows(rows))
    for warning in document["warnings"]:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    kept = document["kept"]
    if not kept:
        parts.append(Text("No fix made the step measurably faster: nothing to keep.", style="bold"))
    elif document["applied"]:
        codes = ", ".join(k["code"] for k in kept)
        parts.append(Text(f"Wrote the fixes that help ({codes}) into {document['script']}.", style="bold green"))
    else:
        parts.append(Text(f"The fixes that help ({', '.join(k['code'] for k in kept)}), as a diff (--apply writes them):", style="bold"))
        parts.append(Syntax(document["diff"], "diff", theme="ansi_dark", background_color="default"))
    return Group(*parts)
