"""The adaptive recording window (``agent/window.py``): it ends once the mean step is known to 5%, after at least
five steps and two worker cycles, or at its caps; ``--active N`` fixes it."""

from __future__ import annotations

import random

from torch.profiler import ProfilerAction

from torchtriage.runtime.agent.step_stats import MAX_ACTIVE, MAX_RECORD_S, MIN_ACTIVE
from torchtriage.runtime.agent.window import Window


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run(window: Window, clock: Clock, step_ms: list[float], workers: int | None = None) -> list[ProfilerAction]:
    """Drive the window as the session does (prof.step() at every step boundary) over steps of the given times."""
    actions, step = [], 0
    window.step_begins(window(0))
    for ms in step_ms:
        clock.now += ms / 1000.0
        window.recorded_step_ends(step, workers)
        step += 1
        action = window(step)
        actions.append(action)
        window.step_begins(action)
        if action == ProfilerAction.NONE and window.durations_ms:
            break
    return actions


def recorded(actions: list[ProfilerAction]) -> int:
    return sum(a in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) for a in actions)


def test_steady_steps_end_at_the_minimum_window_with_the_mean_known() -> None:
    clock = Clock()
    window = Window(0, 0, 0, None, clock=clock)
    rng = random.Random(1)
    run(window, clock, [20 + rng.random() * 0.2 for _ in range(100)])
    assert len(window.durations_ms) == MIN_ACTIVE + 1  # decided at the end of the fifth, the sixth is the last
    summary = window.summary()
    assert summary["adaptive"] and summary["ended_by"] == "interval" and summary["half_width"] < 0.05


def test_two_workers_are_recorded_for_two_whole_cycles_of_their_rhythm() -> None:
    clock = Clock()
    window = Window(0, 0, 0, None, clock=clock)
    rng = random.Random(2)
    steps = [168 + rng.random() if i % 2 == 0 else 6 + rng.random() for i in range(100)]
    run(window, clock, steps, workers=4)
    assert len(window.durations_ms) >= 2 * 4  # two cycles of four workers before the interval may end it
    assert window.summary()["ended_by"] == "interval"


def test_noisy_steps_run_to_a_cap() -> None:
    clock = Clock()
    window = Window(0, 0, 0, None, clock=clock)
    rng = random.Random(3)
    run(window, clock, [rng.choice([5.0, 50.0, 500.0]) for _ in range(200)])
    summary = window.summary()
    assert summary["ended_by"] in ("time", "steps") and summary["half_width"] > 0.05
    assert len(window.durations_ms) <= MAX_ACTIVE
    if summary["ended_by"] == "time":
        assert sum(window.durations_ms) / 1000.0 >= MAX_RECORD_S - 0.5


def test_a_fixed_window_records_exactly_what_was_asked() -> None:
    clock = Clock()
    window = Window(0, 1, 1, 7, clock=clock)
    actions = run(window, clock, [20.0] * 30)
    assert recorded(actions) == 7 and not window.adaptive and window.summary()["ended_by"] == ""
    assert window.note() is None


def test_a_script_that_ends_early_says_how_well_the_mean_was_known() -> None:
    clock = Clock()
    window = Window(0, 0, 0, None, clock=clock)
    run(window, clock, [10.0, 30.0, 10.0])
    note = window.ended_early_note()
    assert note.startswith("the script ended after 3 recorded steps, before the mean step was known to \u00b15%")
    assert window.summary()["ended_by"] == "script_end"
