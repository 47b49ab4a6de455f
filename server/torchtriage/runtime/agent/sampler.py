"""Sample the main thread's innermost user frame (file, function, line) in the background.

Operator-slot work (``a @ b``, ``x[i]``) has no Python call event in the
profiler's tree; where the tree only knows the enclosing user function, these
samples name the line.  Timestamps use ``time.time_ns()``, the clock of the
profiler's events.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

Sample = Tuple[int, str, str, int]  # time_ns, filename, function, line


class FrameSampler:
    """A daemon thread that records samples every ``interval_s`` until stopped."""

    def __init__(
        self, thread_id: int, is_user: Callable[[str], bool], interval_s: float = 0.001, boundary: Any = None
    ) -> None:
        """``boundary``: a code object; frames from it outwards are not looked at (in a forked
        DataLoader worker, the frames below the worker loop are the parent's, frozen at the fork)."""
        self.thread_id = thread_id
        self.boundary = boundary
        self.is_user = is_user
        self.interval_s = interval_s
        self.samples: List[Sample] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._user_code: Dict[object, bool] = {}
        self._saved_switch_interval: Optional[float] = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._thread is None:
            # Pure-Python loops hold the GIL for the whole switch interval (5 ms by
            # default), so a 1 ms sampler would only get a turn every 5 ms and miss
            # the lines doing the work; a shorter interval while sampling fixes that.
            self._saved_switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(self._saved_switch_interval, self.interval_s / 2))
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="torchtriage-sampler", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(timeout=2.0)
        if self._saved_switch_interval is not None:
            sys.setswitchinterval(self._saved_switch_interval)
            self._saved_switch_interval = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            time.sleep(self.interval_s)

    def sample_once(self) -> None:
        sample = user_sample(sys._current_frames().get(self.thread_id), time.time_ns(), self.is_user, self._user_code, self.boundary)
        if sample is not None:
            self.samples.append(sample)


def user_sample(frame: Any, now: int, is_user: Callable[[str], bool], known: Dict[object, bool],
                boundary: Any = None) -> Optional[Sample]:
    """The sample of ``frame``'s innermost user frame at ``now`` (None: no user frame below ``boundary``).
    ``known``: code object -> whether it is user code, filled in as frames are met."""
    while frame is not None:
        code = frame.f_code
        if code is boundary:
            return None
        user = known.get(code)
        if user is None:
            user = known[code] = is_user(code.co_filename)
        if user:
            return (now, code.co_filename, code.co_name, frame.f_lineno or 0)
        frame = frame.f_back
    return None
