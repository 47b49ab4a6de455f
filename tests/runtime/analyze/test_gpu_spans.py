"""The GPU's busy spans gathered out of order in the first pass give the agent's idle gaps, however often the
list is compacted (spans closer than ``MIN_GAP_NS`` merged), and the compacted list stays short."""

from __future__ import annotations

import random

import pytest

from torchtriage.runtime.agent.intervals import MIN_GAP_NS, idle_spans
from torchtriage.runtime.agent.wire import GpuActivity, Step
from torchtriage.runtime.offline import gpu_spans
from torchtriage.runtime.offline.gpu_spans import GpuSpans


def _kernels(seed: int, count: int) -> list[tuple[int, int, str]]:
    rng = random.Random(seed)
    out, t = [], 0
    for k in range(count):
        t += rng.choice([0, 500, 3_000, 15_000, 25_000, 400_000])  # overlapping, close, and gaps worth naming
        out.append((t, t + rng.randint(0, 40_000), f"kernel_{k % 7}"))
    rng.shuffle(out)  # kineto's file order is not time order
    return out


@pytest.mark.parametrize("compact_at", [8, 100, 1 << 20])
def test_idle_gaps_match_the_agents_rule_whatever_the_compaction(monkeypatch: pytest.MonkeyPatch, compact_at: int) -> None:
    monkeypatch.setattr(gpu_spans, "COMPACT_AT", compact_at)
    kernels = _kernels(seed=compact_at, count=3_000)
    end = max(stop for _, stop, _ in kernels)
    steps = [Step(i, i * end // 5, (i + 1) * end // 5) for i in range(5)]
    spans = GpuSpans()
    for start, stop, name in kernels:
        spans.add(start, stop, name)
    agent = idle_spans([GpuActivity(0, 0, -1, name, start, stop - start) for start, stop, name in kernels], steps)
    wanted = [s for s in agent if s[2] - s[1] >= MIN_GAP_NS]
    assert len(wanted) > 50
    assert [s for s in spans.idle(steps) if s[2] - s[1] >= MIN_GAP_NS] == wanted
    if compact_at < len(kernels):
        assert len(spans) < len(kernels) // 2  # merged, not kept one per kernel
