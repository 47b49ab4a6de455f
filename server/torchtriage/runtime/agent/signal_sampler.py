"""Sample the main thread's innermost user frame from a timer signal: where it is, not where it lets go of the GIL.

``FrameSampler`` is a thread, and a thread can only look at the main thread's
frame once it holds the GIL.  A loop that drops the GIL often (every row of
bench/starvation_lab.py's per-pixel loop calls ``torch.tensor``, which
releases it) hands it over at those calls, well before the switch interval
forces it: all its samples then land on the releasing line and none on the
per-pixel line that takes the time (measured: 0 of 70 samples).  A window
recorded with Python frames times those calls exactly and only asks the
samples about a function's own time; a window recorded without them
(``window.py``) has only the samples, so it takes them from ``ITIMER_REAL``:
the interpreter runs the handler in the main thread between two bytecodes,
with the frame that was running, and a sleep or a long op is sampled on
the line that called it, once it returns or is interrupted.

The timer and the handler are the process's: they are only taken when nobody
else uses them (``available``), system calls interrupted by the signal are
restarted (``siginterrupt(..., False)``), and forked DataLoader workers start
with no timer.  Timestamps use ``time.time_ns()``, the clock of the profiler's events.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .sampler import Sample, user_sample


class SignalSampler:
    """Frame samples from ``SIGALRM`` every ``interval_s`` while started; the interface of ``FrameSampler``."""

    def __init__(self, is_user: Callable[[str], bool], interval_s: float = 0.001) -> None:
        self.is_user = is_user
        self.interval_s = interval_s
        self.samples: List[Sample] = []
        self._user_code: Dict[object, bool] = {}
        self._previous: Any = None
        self._running = False

    @staticmethod
    def available() -> bool:
        """Whether this process's main thread can take the timer: no handler or timer of anyone else's."""
        return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None) and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        if self._running:
            return
        self._previous = signal.signal(signal.SIGALRM, self._on_signal)
        signal.siginterrupt(signal.SIGALRM, False)  # system calls the signal interrupts are restarted
        signal.setitimer(signal.ITIMER_REAL, self.interval_s, self.interval_s)
        self._running = True

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if signal.getsignal(signal.SIGALRM) != self._on_signal:
            return  # the script took the signal over meanwhile: its handler and timer stay
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        if threading.current_thread() is threading.main_thread():  # (only the main thread may set a handler)
            signal.signal(signal.SIGALRM, self._previous if self._previous is not None else signal.SIG_DFL)

    def _on_signal(self, signum: int, frame: Optional[Any]) -> None:
        sample = user_sample(frame, time.time_ns(), self.is_user, self._user_code)
        if sample is not None:
            self.samples.append(sample)


def frame_sampler_for(stackless: bool, thread_sampler: Any) -> Any:
    """The sampler a window needs: the signal's when it has no Python frames and the timer is free, else ``thread_sampler``."""
    if stackless and SignalSampler.available():
        return SignalSampler(thread_sampler.is_user, thread_sampler.interval_s)
    return thread_sampler
