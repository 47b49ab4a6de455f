"""The terminal summary's lines about the device's work: memory at the peak and the largest GPU idle gap.

Built from report.json's ``memory_shape`` and ``gpu_idle_gaps`` (schema 1.2;
nothing for older reports).  Runtime findings that are warnings are printed
with the others; the TTR6xx/TTR7xx ones that are only information (memory
advice on a run far from its limit, small Tensor-Core costs) are printed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

MIB = 2**20


def device_lines(report: dict[str, Any]) -> list[Text]:
    """One line for the memory at the peak, one for the largest GPU idle gap (each only when recorded), and
    the device findings that are information only."""
    lines = []
    shape = report.get("memory_shape")
    if shape and shape["peak_bytes"]:
        total = shape["peak_bytes"]
        parts = sorted(((c, b) for c, b in shape["components"].items() if b), key=lambda kv: -kv[1])
        text = ", ".join(f"{c.replace('_', ' ')} {b / total * 100:.0f}%" for c, b in parts)
        lines.append(Text(f"  Memory at the peak: {total / MIB:,.1f} MiB = {text}", style="dim"))
    gaps = report.get("gpu_idle_gaps") or []
    if gaps:
        g = gaps[0]
        where = f"{Path(g['path']).name}:{g['line']}" if g["path"] else "outside your code"
        lines.append(Text(f"  Largest GPU idle gap: {g['duration_ms']:.2f} ms in step {g['step']}, CPU at {where}"
                          + (f" ({g['cpu']})" if g["cpu"] else ""), style="dim"))
    for f in report.get("runtime_findings") or []:
        if f["code"].startswith(("TTR6", "TTR7")) and f["severity"] != "warning":
            lines.append(Text(f"  {f['code']} {Path(f['path']).name}:{f['line']}: {f['message']}", style="dim"))
    return lines
