"""Run a training script unmodified and time its steps with the workload's own synchronised clock.

    python bench/gpu/step_clock.py OUT.json SCRIPT [script args...]

Every ``optimizer.step()`` (a global post-hook) ends a step; a script with no
optimizer (an evaluation loop) ends one at every batch its ``DataLoader``
hands out.  At each end the clock first waits for the GPU
(``torch.cuda.synchronize()``), so a step's time is the time its work took,
not the time its launches took.  Each stamp also notes whether a profiler was
recording then, so a run under ``torchtriage profile`` tells its profiled steps
from the rest.  OUT.json: ``{"source": "optimizer"|"loader", "steps_ms":
[...], "profiled": [...], "wall_s": ...}``.
"""

from __future__ import annotations

import atexit
import json
import runpy
import sys
import time
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import dataloader


class StepClock:
    """Stamps taken at step ends, by source."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stamps: dict[str, list[tuple[float, bool]]] = {"optimizer": [], "loader": []}

    def stamp(self, source: str) -> None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        self.stamps[source].append((time.perf_counter(), bool(torch._C._autograd._profiler_enabled())))

    def result(self) -> dict[str, Any]:
        source = "optimizer" if self.stamps["optimizer"] else "loader"
        stamps = self.stamps[source]
        steps = [(b[0] - a[0]) * 1000.0 for a, b in zip(stamps, stamps[1:])]
        profiled = [a[1] and b[1] for a, b in zip(stamps, stamps[1:])]
        return {"source": source, "steps_ms": steps, "profiled": profiled, "wall_s": time.perf_counter() - self.started}


def main(argv: list[str]) -> None:
    out, script, *args = argv
    clock = StepClock()
    register_optimizer_step_post_hook(lambda *_: clock.stamp("optimizer"))
    plain_next = dataloader._BaseDataLoaderIter.__next__

    def timed_next(self: Any) -> Any:
        batch = plain_next(self)
        clock.stamp("loader")
        return batch

    dataloader._BaseDataLoaderIter.__next__ = timed_next  # type: ignore[method-assign]

    def write() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(clock.result(), handle)

    atexit.register(write)  # a script that ends with sys.exit or os._exit in a worker
    sys.argv = [script, *args]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        write()


if __name__ == "__main__":
    main(sys.argv[1:])
