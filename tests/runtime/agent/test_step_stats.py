"""Which steps belong together (``agent/step_stats.py``): a worker cycle, an accumulation period, or none."""

from __future__ import annotations

import random

import pytest

from torchtriage.runtime.agent.step_stats import autocorrelation, block_length, mean_half_width


def test_two_workers_alternate_and_the_block_is_their_cycle() -> None:
    rng = random.Random(3)
    steps = [168 + rng.random() * 4 if i % 2 == 0 else 6 + rng.random() for i in range(20)]
    assert block_length(steps) == 2
    assert autocorrelation(steps, 2) > 0.9 and autocorrelation(steps, 1) < -0.9


def test_a_slow_step_every_fourth_is_a_period_of_four() -> None:
    rng = random.Random(4)
    steps = [40 + rng.random() if i % 4 == 3 else 10 + rng.random() for i in range(24)]
    assert block_length(steps) == 4


def test_independent_steps_are_single_blocks_and_drifting_ones_are_grouped() -> None:
    rng = random.Random(5)
    assert block_length([20 + rng.gauss(0, 1) for _ in range(30)]) == 1
    drifting = [20 + 0.5 * i + rng.gauss(0, 0.2) for i in range(27)]  # neighbours alike, no rhythm
    assert block_length(drifting) == 3  # about n ** (1/3)


def test_too_few_steps_have_no_rhythm_and_no_half_width() -> None:
    assert block_length([1.0, 2.0, 1.0]) == 1
    assert mean_half_width([5.0]) is None
    assert mean_half_width([10.0, 30.0, 10.0]) > 0  # single-step blocks: three of them
    assert autocorrelation([7.0] * 10, 1) == 0.0  # equal steps: nothing to correlate


def test_the_half_width_is_a_share_of_the_mean_and_shrinks_with_more_steps() -> None:
    rng = random.Random(6)
    steps = [20 + rng.gauss(0, 2) for _ in range(100)]
    few, many = mean_half_width(steps[:10]), mean_half_width(steps)
    assert few is not None and many is not None and many < few
    assert many == pytest.approx(1.96 * 2 / 10 / 20, rel=0.35)  # z * sd / sqrt(n) / mean
    assert mean_half_width([20.0] * 10) == 0.0
