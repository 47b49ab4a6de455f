"""The interval of a step-time difference (``compare/interval.py``): blocks over the steps' rhythm, runs
drawn with replacement, a fixed seed."""

from __future__ import annotations

import random

from torchtriage.runtime.compare.interval import Side, difference_interval


def _alternating(slow: float, fast: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [slow + rng.random() * 4 if i % 2 == 0 else fast + rng.random() for i in range(n)]


def test_a_loader_fix_is_a_difference_whose_interval_excludes_zero() -> None:
    before = Side.of([_alternating(168, 6, 20, 1)])  # two workers: every other step waits (mean ~88 ms)
    rng = random.Random(2)
    after = Side.of([[70 + rng.random() * 3 for _ in range(20)]])
    interval = difference_interval(before, after)
    assert interval is not None and interval.blocks == (2, 1)
    assert interval.high_ms < 0 and interval.low_ms > -40  # ~ -17 ms, and not wider than the data allows
    assert interval.steps == (20, 20) and interval.runs == (1, 1)


def test_the_same_steps_give_an_interval_around_zero_and_the_same_interval_every_time() -> None:
    rng = random.Random(7)
    a = [20 + rng.gauss(0, 1) for _ in range(15)]
    b = [20 + rng.gauss(0, 1) for _ in range(15)]
    first = difference_interval(Side.of([a]), Side.of([b]))
    assert first is not None and first.low_ms < 0 < first.high_ms
    assert difference_interval(Side.of([a]), Side.of([b])) == first


def test_run_to_run_noise_widens_the_interval() -> None:
    """Steady steps in runs whose means differ: one run each hides it, three runs each show it."""
    runs_a = [[m + 0.01 * i for i in range(5)] for m in (18.5, 20.0, 21.5)]
    runs_b = [[m + 0.01 * i for i in range(5)] for m in (19.0, 20.5, 22.0)]
    single = difference_interval(Side.of([runs_a[1]]), Side.of([runs_b[1]]))
    repeated = difference_interval(Side.of(runs_a), Side.of(runs_b))
    assert single is not None and repeated is not None
    assert single.low_ms > 0  # 0.5 ms apart, each run steady to 0.04 ms
    assert repeated.low_ms < 0 < repeated.high_ms and repeated.runs == (3, 3)


def test_a_side_without_steps_has_no_interval() -> None:
    assert difference_interval(Side.of([[10.0]]), Side.of([[9.0, 9.5]])) is None
    assert difference_interval(Side.of([]), Side.of([[9.0, 9.5]])) is None
