"""The timer-signal frame sampler (``agent/signal_sampler.py``): it sees where the main thread is, also in a loop
that lets go of the GIL every few microseconds, where the sampling thread only ever sees the releasing line."""

from __future__ import annotations

import collections
import signal
import threading
import time

import pytest
import torch

from torchtriage.runtime.agent.sampler import FrameSampler
from torchtriage.runtime.agent.signal_sampler import SignalSampler, frame_sampler_for

HERE = __file__


def _rows(sampler, seconds: float = 0.4) -> tuple[collections.Counter[str], float]:
    """Run a per-element loop whose every row ends in torch.tensor (which releases the GIL) under ``sampler``;
    the samples on each part, and the share of the time the element loops really took."""
    element_s = release_s = 0.0
    sampler.start()
    try:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            row = [0.5] * 200
            for x in range(200):
                row[x] = min(1.0, max(0.0, row[x] * 1.0001))  # ELEMENT
            middle = time.perf_counter()
            torch.tensor(row)  # RELEASE
            element_s, release_s = element_s + middle - began, release_s + time.perf_counter() - middle
    finally:
        sampler.stop()
    source = open(HERE, encoding="utf-8").read().splitlines()
    counts = collections.Counter(
        "element" if "# ELEMENT" in source[line - 1] else "release" if "# RELEASE" in source[line - 1] else "other"
        for _, _, function, line in sampler.samples if function == "_rows"
    )
    return counts, element_s / (element_s + release_s)


def test_the_signal_samples_split_the_loop_as_its_time_went() -> None:
    # a sampling thread gets the GIL only where torch.tensor lets go of it, so it puts most samples there
    counts, element_share = _rows(SignalSampler(lambda path: path == HERE))
    placed = counts["element"] + counts["release"]
    assert placed >= 100
    assert counts["element"] / placed == pytest.approx(element_share, abs=0.15)


def test_the_timer_and_the_handler_are_given_back() -> None:
    sampler = SignalSampler(lambda path: True)
    assert SignalSampler.available()
    sampler.start()
    assert not SignalSampler.available() and signal.getitimer(signal.ITIMER_REAL)[1] > 0
    sampler.stop()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
    assert SignalSampler.available()


def test_a_timer_someone_else_holds_is_left_alone() -> None:
    thread_sampler = FrameSampler(threading.get_ident(), lambda path: True)
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    try:
        assert not SignalSampler.available()
        assert frame_sampler_for(True, thread_sampler) is thread_sampler
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert isinstance(frame_sampler_for(True, thread_sampler), SignalSampler)
    assert frame_sampler_for(False, thread_sampler) is thread_sampler


def test_a_sleep_is_sampled_on_its_line_and_keeps_its_length() -> None:
    sampler = SignalSampler(lambda path: path == HERE)
    sampler.start()
    began = time.perf_counter()
    time.sleep(0.05)  # SLEEP: interrupted by the signal 50 times, restarted each time
    slept = time.perf_counter() - began
    sampler.stop()
    assert slept == pytest.approx(0.05, abs=0.02)
    lines = {line for _, _, _, line in sampler.samples}
    source = open(HERE, encoding="utf-8").read().splitlines()
    assert any("# SLEEP" in source[line - 1] for line in lines)


def test_a_script_that_takes_the_signal_over_keeps_it() -> None:
    sampler = SignalSampler(lambda path: True)
    sampler.start()
    fired = []
    signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))  # the script's own alarm
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    try:
        sampler.stop()
        time.sleep(0.05)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def test_stopped_from_another_thread_the_timer_stops() -> None:
    sampler = SignalSampler(lambda path: True)
    sampler.start()
    stopper = threading.Thread(target=sampler.stop)
    stopper.start()
    stopper.join()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and not sampler.running
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
