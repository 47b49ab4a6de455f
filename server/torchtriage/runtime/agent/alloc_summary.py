"""The allocator's events of a window, summed before its last step: agent.json grows with one step, not the window.

What the host reads from the allocations (``attribution.lines.memory``,
``attribution.memory.decompose``) needs them one by one only in the last
recorded step (the memory at its peak, block by block) and for the blocks
still live when it began.  Before it, each step's peak and end and each
site's allocated bytes are enough.  So the allocations before the last step
are replaced by ``AllocStep`` and ``AllocSite`` rows plus the blocks live at
its start, and the host is told where the cut is (``allocs_cut_ns``).  A
window of one step keeps its events as they are.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .wire import Alloc, AllocSite, AllocStep, Step


def summarize_allocs(allocs: Sequence[Alloc], steps: Sequence[Step]) -> Tuple[List[Alloc], List[AllocStep], List[AllocSite], Optional[int]]:
    """(the events of the last step and after, led by the blocks live at its start; each earlier step's peak and
    end; each site's bytes allocated before it; the cut), or the events unchanged and no cut for a single step."""
    if len(steps) < 2:
        return list(allocs), [], [], None
    cut = steps[-1].start_ns
    ordered = sorted(allocs, key=lambda a: a.time_ns)
    live: Dict[Tuple[str, int], Alloc] = {}
    peaks: Dict[Tuple[str, int], List[int]] = {}  # (device, step) -> [peak, end]
    sites: Dict[Tuple[str, int, int], int] = {}
    after: List[Alloc] = []
    for alloc in ordered:
        if alloc.time_ns >= cut:
            after.append(alloc)
            continue
        if alloc.step >= 0:
            entry = peaks.get((alloc.device, alloc.step))
            if entry is None:
                peaks[(alloc.device, alloc.step)] = [alloc.total_allocated, alloc.total_allocated]
            else:
                entry[0] = max(entry[0], alloc.total_allocated)
                entry[1] = alloc.total_allocated
        if alloc.size > 0:
            live[(alloc.device, alloc.ptr)] = alloc
            key = (alloc.device, alloc.chain, alloc.root)
            sites[key] = sites.get(key, 0) + alloc.size
        else:
            live.pop((alloc.device, alloc.ptr), None)
    carried = sorted(live.values(), key=lambda a: a.time_ns)
    step_rows = [AllocStep(device, step, peak, end) for (device, step), (peak, end) in peaks.items()]
    site_rows = [AllocSite(device, chain, root, size) for (device, chain, root), size in sites.items()]
    return carried + after, step_rows, site_rows, cut
