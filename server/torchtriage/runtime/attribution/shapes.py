"""agent.json's matmul and convolution signatures -> ``ShapeCost`` s, each on the user line that ran it."""

from __future__ import annotations

from typing import Any

from ..agent.wire import ShapeStat, read_records
from ..results.device_facts import Attributed, ShapeCost


def shape_costs(raw: dict[str, Any], attribution: Attributed) -> list[ShapeCost]:
    """agent.json's ``shapes`` with each signature's user line, merged per (op, dtype, dims, line)."""
    merged: dict[tuple[str, str, str, str, int], ShapeCost] = {}
    for stat in read_records(raw.get("shapes", []), ShapeStat):
        alternatives, _ = attribution.resolve(stat.chain, stat.root)
        path, line, function = max(alternatives, key=lambda a: a[1])[0][-1] if alternatives else ("", 0, "")
        key = (stat.name, stat.dtype, stat.dims, path, line)
        cost = merged.get(key)
        if cost is None:
            dims = [[int(x) for x in part.split("x") if x] for part in stat.dims.split(",")] if stat.dims else []
            cost = merged[key] = ShapeCost(stat.name, stat.dtype, dims, 0, 0.0, 0.0, path, line, function)
        cost.calls += stat.calls
        cost.cpu_us += stat.cpu_ns / 1000.0
        cost.gpu_us += stat.gpu_ns / 1000.0
    return sorted(merged.values(), key=lambda c: (-c.gpu_us, -c.cpu_us, c.op, c.path, c.line))
