"""The live memory at the window's peak, by component (parameters, gradients, optimizer state, activations, other).

Reads the allocations the attribution placed and the storages the agent saw held (``held``) when the
window ended; what ``memory_shape`` makes of the result lives in ``diagnosis/device``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ..agent.wire import Held, OptimizerInfo, read_records
from ..results.device_facts import MEMORY_COMPONENTS, ActivationLine, Attributed, MemoryShape, OptimizerSummary


HELD_COMPONENT = {"parameter": "parameters", "gradient": "gradients", "optimizer_state": "optimizer_state"}


def decompose(raw: dict[str, Any], attribution: Attributed, device: str) -> MemoryShape | None:
    """The live memory at the window's peak by component (None without allocations in a step)."""
    allocs = sorted((a for a in attribution.allocs if a.device == device), key=lambda a: a.time_ns)
    last = max((a.step for a in allocs), default=-1)
    in_step = [i for i, a in enumerate(allocs) if a.step == last]
    if last < 0 or not in_step:
        return None
    peak = max(in_step, key=lambda i: (allocs[i].total_allocated, -i))
    live: dict[int, Any] = {}
    at_peak: dict[int, Any] = {}
    for i, a in enumerate(allocs):
        if a.size > 0:
            live[a.ptr] = a
        else:
            live.pop(a.ptr, None)
        if i == peak:
            at_peak = dict(live)
    held = [h for h in read_records(raw.get("held", []), Held) if h.device == device]
    kinds = {h.ptr: h.kind for h in held}
    seen = {a.ptr for a in allocs if a.size > 0}
    step = allocs[peak].step
    optimizer_lines = _optimizer_lines(attribution)
    components: dict[str, int] = dict.fromkeys(MEMORY_COMPONENTS, 0)
    lines: Counter[tuple[str, int, str]] = Counter()
    temporaries = 0
    for ptr, a in at_peak.items():
        if ptr in kinds and live.get(ptr) is a:  # the same allocation is still held when the window ends
            components[HELD_COMPONENT[kinds[ptr]]] += a.size
            continue
        where = _line(attribution, a)
        if a.step == step and (where[0], where[1]) not in optimizer_lines:
            components["activations"] += a.size
            if where[0]:
                lines[where] += a.size
        else:
            components["other"] += a.size
            temporaries += a.size if a.step == step else 0
    before = defaultdict(int)  # storages the window never saw allocated: live all along
    for h in held:
        if h.ptr not in seen:
            before[HELD_COMPONENT[h.kind]] += h.nbytes
    for kind, nbytes in before.items():
        components[kind] += nbytes
    if device == "cuda":  # the allocator's total counts everything live; what is left is other
        components["other"] += max(0, allocs[peak].total_allocated - sum(a.size for a in at_peak.values()) - sum(before.values()))
    optimizers = [OptimizerSummary(*o) for o in read_records(raw.get("optimizers", []), OptimizerInfo)]
    return MemoryShape(
        device=device,
        peak_bytes=sum(components.values()),
        peak_step=step,
        components=components,
        activation_lines=[ActivationLine(p, ln, f, b) for (p, ln, f), b in lines.most_common(5)],
        optimizers=optimizers,
        step_temporaries=temporaries,
    )


def _line(attribution: Attributed, alloc: Any) -> tuple[str, int, str]:
    alternatives, _ = attribution.resolve(alloc.chain, alloc.root)
    return max(alternatives, key=lambda a: a[1])[0][-1] if alternatives else ("", 0, "")


def _optimizer_lines(attribution: Attributed) -> set[tuple[str, int]]:
    """Lines whose own time is mostly the optimizer's (``opt.step()``): their allocations are its temporaries."""
    by_line: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    for (path, line, category, _device), us in attribution.lines.self_us.items():
        by_line[(path, line)][category] += us
    return {key for key, cats in by_line.items() if cats and cats.most_common(1)[0][0] == "optimizer"}
