"""agent.json's GPU idle gaps -> ``GpuGap`` s, each placed on a line (from the frame samples where the probe only knew its function)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from ..agent.wire import Gap, read_records
from ..results.device_facts import GpuGap
from .samples import FrameSample


def read_gaps(raw: dict[str, Any], origin_ns: int, samples: Sequence[FrameSample]) -> list[GpuGap]:
    """agent.json's ``gaps`` with times from the first step's start; inexact lines taken from the samples in the gap."""
    out = []
    for gap in read_records(raw.get("gaps", []), Gap):
        line, exact = gap.line, gap.exact
        if gap.path and not exact:
            inside = Counter(s.line for s in samples
                             if gap.start_ns <= s.time_ns < gap.start_ns + gap.ns and s.path == gap.path and s.function == gap.function)
            if inside:
                line, exact = inside.most_common(1)[0][0], True
        out.append(GpuGap(gap.step, (gap.start_ns - origin_ns) / 1000.0, gap.ns / 1000.0, gap.path, line, gap.function, exact,
                          gap.cpu, gap.probes, gap.next_kernel))
    return out
