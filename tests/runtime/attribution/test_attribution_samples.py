"""Frame samples -> lines: samples taken inside calls the tree timed exactly do not place a function's own time."""

from __future__ import annotations

import pytest

from torchtriage.runtime.agent.wire import Root, Site
from torchtriage.runtime.attribution.samples import FrameSample as Sample, LineResolver

PATH, FUNC = "/w/data.py", "__getitem__"
SLEEP_LINE, LOOP_LINE, DEF_LINE = 27, 33, 25
MS = 1_000_000  # ns


def _samples(pattern: list[int], every_ns: int = MS) -> list[Sample]:
    return [Sample(i * every_ns, PATH, FUNC, line) for i, line in enumerate(pattern)]


def test_a_sleep_line_sampled_through_its_sleep_does_not_take_the_functions_own_time() -> None:
    # 60 ms asleep on line 27 (timed exactly by the tree), 40 ms of operator-slot work on line 33
    resolver = LineResolver(_samples([SLEEP_LINE] * 60 + [LOOP_LINE] * 40), [], 0.001)
    resolver.discount({(PATH, FUNC, SLEEP_LINE): 60_000.0}, {(PATH, FUNC): 40_000.0})
    weights, sampled = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), -1)
    assert sampled and weights == [(LOOP_LINE, 1.0)]


def test_without_exact_calls_the_samples_split_the_time_as_before() -> None:
    resolver = LineResolver(_samples([SLEEP_LINE] * 60 + [LOOP_LINE] * 40), [], 0.001)
    resolver.discount({}, {(PATH, FUNC): 100_000.0})
    weights, _ = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), -1)
    assert dict(weights) == pytest.approx({SLEEP_LINE: 0.6, LOOP_LINE: 0.4}, abs=0.02)


def test_a_line_sampled_a_little_longer_than_its_exact_calls_is_noise() -> None:
    # the sampler runs more often while the GIL is free: 70 samples for 60 ms of sleep
    resolver = LineResolver(_samples([SLEEP_LINE] * 70 + [LOOP_LINE] * 30), [], 0.001)
    resolver.discount({(PATH, FUNC, SLEEP_LINE): 60_000.0}, {(PATH, FUNC): 40_000.0})
    weights, _ = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), -1)
    assert dict(weights) == {LOOP_LINE: 1.0}


def test_all_samples_explained_leaves_the_line_unknown() -> None:
    resolver = LineResolver(_samples([SLEEP_LINE] * 50), [], 0.001)
    resolver.discount({(PATH, FUNC, SLEEP_LINE): 50_000.0}, {(PATH, FUNC): 3_000.0})
    weights, sampled = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), -1)
    assert not sampled and weights == [(DEF_LINE, 1.0)]


def test_samples_inside_the_root_come_first_and_the_function_wide_ones_fill_the_rest() -> None:
    # root 0 spans samples 0..9 (all on line 40); the function elsewhere is on line 41
    samples = [Sample(i * MS, PATH, FUNC, 40 if i < 10 else 41) for i in range(100)]
    resolver = LineResolver(samples, [Root(0, 9 * MS)], 0.001)
    resolver.discount({}, {(PATH, FUNC): 100_000.0})
    full, _ = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), 0, self_us=10_000.0)
    assert dict(full) == pytest.approx({40: 1.0})
    half, _ = resolver.weights(Site("scope", PATH, DEF_LINE, FUNC), 0, self_us=20_000.0)
    assert dict(half)[40] == pytest.approx(0.5 + 0.5 * 0.1, abs=0.02)


def test_a_sample_after_a_long_gap_stands_for_more_time() -> None:
    # the sampler starved for 5 ms while line 33 held the GIL
    times = [0, MS, 2 * MS, 7 * MS, 8 * MS]
    lines = [SLEEP_LINE, SLEEP_LINE, SLEEP_LINE, LOOP_LINE, SLEEP_LINE]
    resolver = LineResolver([Sample(t, PATH, FUNC, line) for t, line in zip(times, lines)], [], 0.001)
    sampled = resolver.sampled_us[(PATH, FUNC)]
    assert sampled[LOOP_LINE] > sampled[SLEEP_LINE] / 3


# -- a window recorded without Python frames: roots with no site, placed by the samples innermost in them -------------

def test_each_sample_places_only_the_innermost_root_it_fell_in() -> None:
    # root 0: a DataLoader range over 0-100 ms; root 1: an op inside it over 10-20 ms
    samples = [Sample(t * MS, PATH, FUNC, SLEEP_LINE if t < 60 else LOOP_LINE) for t in range(0, 100)]
    samples[15] = Sample(15 * MS, PATH, FUNC, 30)  # one of the 9 samples inside the op is on line 30
    resolver = LineResolver(samples, [Root(0, 100 * MS), Root(int(10.5 * MS), int(19.5 * MS))], 0.001)
    outer, found = resolver.root_lines(0)
    assert found and dict(outer) == pytest.approx({(PATH, SLEEP_LINE, FUNC): 51 / 91, (PATH, LOOP_LINE, FUNC): 40 / 91}, abs=0.01)
    inner, found = resolver.root_lines(1)
    assert found and {key for key, _ in inner} == {(PATH, SLEEP_LINE, FUNC), (PATH, 30, FUNC)}


def test_a_root_too_short_for_a_sample_takes_the_nearest_sample_within_the_cap() -> None:
    samples = [Sample(0, PATH, FUNC, SLEEP_LINE), Sample(5 * MS, PATH, FUNC, LOOP_LINE)]
    roots = [Root(int(4.9 * MS), int(4.95 * MS)), Root(500 * MS, 501 * MS)]  # 50 us before a sample; half a second after all
    resolver = LineResolver(samples, roots, 0.001)
    assert resolver.root_lines(0) == ([((PATH, LOOP_LINE, FUNC), 1.0)], True)
    assert resolver.root_lines(1) == ([], False)  # nothing within 10 sampling intervals: no line
