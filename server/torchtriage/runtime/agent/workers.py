"""Sample DataLoader worker processes, so loader time spent in workers gets its lines.

With ``num_workers > 0`` the Dataset and collate code runs in worker
processes; the main thread only waits.  For loaders whose workers are forked
(the Linux default), each worker runs a frame sampler on its main thread and
appends its samples, every ``FLUSH_S`` seconds, to
``<out_dir>/workers/<pid>.jsonl`` as ``[time_ns, file, function, line]``
lines.  Workers started with ``spawn``/``forkserver`` are left alone: their
target would have to be importable by name in a fresh interpreter, and
breaking a user's DataLoader is never worth a profile; then only the wait is
visible, and the report says so.
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import sys
import threading
from typing import Any, Callable, List, Optional

from .sampler import FrameSampler

FLUSH_S = 0.1
STOP_MARKER = "stop"  # written by the host when the window is saved: workers stop sampling


class WorkerSampling:
    """Installs the worker-side sampler into forked DataLoader workers; reads their samples."""

    def __init__(self, out_dir: str, is_user: Callable[[str], bool], interval_s: float) -> None:
        self.folder = os.path.join(out_dir, "workers")
        self.is_user = is_user
        self.interval_s = interval_s
        self._original_init: Any = None

    def install(self) -> None:
        from torch.utils.data import dataloader
        from torch.utils.data._utils import worker

        iterator = dataloader._MultiProcessingDataLoaderIter
        original_init = iterator.__init__
        original_loop = worker._worker_loop
        sampling = self

        def sampled_loop(*args: Any, **kwargs: Any) -> Any:
            return sampling._run_worker(original_loop, args, kwargs)

        def __init__(it: Any, loader: Any) -> None:
            if not _forks(loader):
                return original_init(it, loader)
            worker._worker_loop = sampled_loop  # the workers this iterator forks run the sampler
            try:
                return original_init(it, loader)
            finally:
                worker._worker_loop = original_loop

        self._original_init = original_init
        iterator.__init__ = __init__  # type: ignore[method-assign]

    def uninstall(self) -> None:
        """New iterators start unsampled workers; running workers stop sampling at their next flush."""
        if os.path.isdir(self.folder):
            try:
                open(os.path.join(self.folder, STOP_MARKER), "w").close()
            except OSError:
                pass
        if self._original_init is not None:
            from torch.utils.data import dataloader

            dataloader._MultiProcessingDataLoaderIter.__init__ = self._original_init  # type: ignore[method-assign]
            self._original_init = None

    def samples(self) -> List[List[Any]]:
        """Every sample the workers have flushed so far."""
        found: List[List[Any]] = []
        for path in sorted(glob.glob(os.path.join(self.folder, "*.jsonl"))):
            try:
                with open(path, encoding="utf-8") as handle:
                    for line in handle:
                        try:
                            found.append(json.loads(line))
                        except ValueError:
                            pass  # a line cut short when the worker was killed
            except OSError:
                pass
        return found

    # -- in the worker process ------------------------------------------------
    def _run_worker(self, loop: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        # Frames from this one outwards were inherited from the parent at the fork: not worker work.
        sampler = FrameSampler(threading.get_ident(), self.is_user, self.interval_s, boundary=sys._getframe().f_code)
        flusher: Optional[_Flusher] = None
        try:
            os.makedirs(self.folder, exist_ok=True)
            flusher = _Flusher(sampler, os.path.join(self.folder, f"{os.getpid()}.jsonl"))
            sampler.start()
            flusher.start()
        except Exception:  # never let profiling break the user's loader
            flusher = None
        try:
            return loop(*args, **kwargs)
        finally:
            if flusher is not None:
                sampler.stop()
                flusher.stop()


class _Flusher(threading.Thread):
    """Appends the sampler's new samples to a file every ``FLUSH_S`` (workers may be killed)."""

    def __init__(self, sampler: FrameSampler, path: str) -> None:
        super().__init__(name="torchtriage-worker-flush", daemon=True)
        self.sampler = sampler
        self.path = path
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(FLUSH_S):
            self.flush()
            if os.path.exists(os.path.join(os.path.dirname(self.path), STOP_MARKER)):
                self.sampler.stop()  # the recorded window is over: stop costing the worker anything
                return

    def stop(self) -> None:
        self._stop_event.set()
        self.flush()

    def flush(self) -> None:
        """Write and drop what was sampled since the last flush (memory stays bounded)."""
        samples = self.sampler.samples
        end = len(samples)
        if not end:
            return
        batch = samples[:end]
        del samples[:end]  # the sampler thread only appends: nothing after ``end`` is lost
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(list(sample)) + "\n" for sample in batch))


def _forks(loader: Any) -> bool:
    """Whether this loader's workers are forked (then the patched target needs no pickling)."""
    context = getattr(loader, "multiprocessing_context", None) or multiprocessing.get_context()
    try:
        return context.get_start_method() == "fork"
    except Exception:
        return False
