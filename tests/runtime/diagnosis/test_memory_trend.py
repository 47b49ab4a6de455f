"""Memory trend: linear fit over steps, steady growth beyond noise, the retaining line."""

from __future__ import annotations

import pytest

from torchtriage.runtime.diagnosis.bottleneck import (
    MIN_GROWTH_BYTES_PER_STEP,
    MIN_MEMORY_STEPS,
    diagnose,
    memory_trend,
)
from torchtriage.runtime.results.profile_data import MemoryLine, MemoryStep, ProfileData, StepTiming

MIB = 2**20


def make_profile(ends: list[int], lines: list[MemoryLine] = (), compute: float = 0.9, **kw) -> ProfileData:
    n = max(1, len(ends))
    return ProfileData(
        script="/w/train.py",
        argv=[],
        cwd="/w",
        device="cpu",
        device_name="cpu",
        torch_version="2.13.0",
        python="3.11",
        step_detection="optimizer",
        steps=[StepTiming(i, i * 1000.0, (i + 1) * 1000.0) for i in range(n)],
        category_us={"compute": compute * 1000.0 * n},
        memory_steps=[MemoryStep(i, e + 4 * MIB, e) for i, e in enumerate(ends)],
        memory_lines=list(lines),
        **kw,
    )


def test_linear_growth_is_measured_exactly() -> None:
    t = memory_trend(make_profile([10 * MIB + i * MIB for i in range(8)]))
    assert t.growth_bytes_per_step == pytest.approx(MIB)
    assert t.fit_r2 == pytest.approx(1.0)
    assert t.steady_growth
    assert t.peak_bytes == 10 * MIB + 7 * MIB + 4 * MIB


def test_steady_growth_is_the_verdict_and_names_the_retaining_line() -> None:
    lines = [
        MemoryLine("/w/train.py", 30, allocated_bytes=50 * MIB, retained_bytes=0),
        MemoryLine("/w/train.py", 41, allocated_bytes=9 * MIB, retained_bytes=7 * MIB),
    ]
    d = diagnose(make_profile([10 * MIB + i * MIB for i in range(8)], lines))
    assert d.bottleneck.kind == "memory_growth"
    assert d.memory.top_lines[0].line == 41  # sorted by retained, not allocated
    assert ("/w/train.py", 41) in [(e.path, e.line) for e in d.bottleneck.evidence]
    assert "train.py:41" in d.bottleneck.recommendations[0].action
    # the share is the part of the final allocation added during the window
    assert d.bottleneck.share == pytest.approx(7 * MIB / (17 * MIB))
    # the time verdict is kept as the first secondary one
    assert d.secondary and d.secondary[0].kind == "compute"


def test_flat_memory_with_jitter_is_not_growth() -> None:
    base = 100 * MIB
    jitter = [0, 3, -2, 4, -1, 2, -3, 1]
    t = memory_trend(make_profile([base + j * 64 * 1024 for j in jitter]))
    assert not t.steady_growth


def test_a_one_off_jump_is_not_steady_growth() -> None:
    # allocation at step 4 that stays (e.g. a lazily built buffer): rises once
    ends = [50 * MIB] * 4 + [80 * MIB] * 4
    t = memory_trend(make_profile(ends))
    assert t.growth_bytes_per_step > MIN_GROWTH_BYTES_PER_STEP
    assert not t.steady_growth


def test_growth_below_the_floor_is_noise() -> None:
    step = MIN_GROWTH_BYTES_PER_STEP // 2
    assert not memory_trend(make_profile([MIB + i * step for i in range(10)])).steady_growth
    step = MIN_GROWTH_BYTES_PER_STEP * 2
    assert memory_trend(make_profile([MIB + i * step for i in range(10)])).steady_growth


def test_too_few_steps_cannot_show_a_trend() -> None:
    n = MIN_MEMORY_STEPS - 1
    assert not memory_trend(make_profile([i * 10 * MIB for i in range(n)])).steady_growth
    assert memory_trend(make_profile([i * 10 * MIB for i in range(MIN_MEMORY_STEPS)])).steady_growth


def test_no_memory_data() -> None:
    t = memory_trend(make_profile([]))
    assert (t.peak_bytes, t.growth_bytes_per_step, t.steady_growth) == (0, 0.0, False)


def test_snapshot_path_comes_from_extra() -> None:
    p = make_profile([MIB * i for i in range(6)], extra={"memory_snapshot": "/runs/1/memory.pickle"})
    d = diagnose(p)
    assert d.memory.snapshot == "/runs/1/memory.pickle"
    assert any("/runs/1/memory.pickle" in e.text for e in d.bottleneck.evidence)
