"""The smallest kineto-shaped traces that show one pattern each, for the rules no recorded trace here exhibits.

SYNTHETIC: written by the tests, not recorded.  Each has three 1.5 ms ``ProfilerStep#`` ranges, one after the
other, on one CPU thread of process ``CPU_PID``; what a step holds is given by a function of the step's start (microseconds).
Python frames name a script the test writes (``script``), so its lines are found as in a recorded trace;
C calls, operators (with ``Input type`` / ``Input Dims`` as ``record_shapes`` writes them), CUDA runtime
calls and their GPU activity (``pid`` = the device, linked by ``correlation``) have the fields torch 2.x's
exporter gives them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

CPU_PID, CPU_TID, STREAM = 4242, 1, 7
STEP_US, STEPS = 1500.0, 3


def device(name: str, major: int, minor: int, total_bytes: int, index: int = 0) -> dict[str, Any]:
    return {"id": index, "name": name, "totalGlobalMem": total_bytes, "computeMajor": major, "computeMinor": minor}


class SyntheticTrace:
    def __init__(self, script: Path, devices: Optional[list[dict[str, Any]]] = None,
                 distributed: Optional[dict[str, Any]] = None) -> None:
        self.script = script
        self.header: dict[str, Any] = {"schemaVersion": 1, "with_stack": 1, "record_shapes": 1}
        if devices:
            self.header["deviceProperties"] = devices
        if distributed:
            self.header["distributedInfo"] = distributed
        self.events: list[dict[str, Any]] = []
        self._correlation = 0

    def _x(self, cat: str, name: str, ts: float, dur: float, pid: int = CPU_PID, tid: int = CPU_TID, **args: Any) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args})

    def frame(self, line: int, function: str, ts: float, dur: float) -> None:
        """A Python frame of the test's script: ``path(LINE): function`` (LINE: the ``def`` line, as for a call)."""
        self._x("python_function", f"{self.script}({line}): {function}", ts, dur)

    def library(self, name: str, ts: float, dur: float) -> None:
        """A library frame (``torch/utils/data/dataloader.py(720): __next__``) or a module call (``nn.Module: X_0``)."""
        self._x("python_function", name, ts, dur)

    def call(self, method: str, ts: float, dur: float) -> None:
        """A C call: ``<built-in method NAME of ...>``."""
        self._x("python_function", f"<built-in method {method} of torch._C.TensorBase object at 0x7f0000001000>", ts, dur)

    def op(self, name: str, ts: float, dur: float, types: Optional[list[str]] = None, dims: Optional[list[Any]] = None) -> None:
        args: dict[str, Any] = {}
        if types is not None:
            args["Input type"] = types
            args["Input Dims"] = dims if dims is not None else [[] for _ in types]
        self._x("cpu_op", name, ts, dur, **args)

    def annotation(self, name: str, ts: float, dur: float) -> None:
        self._x("user_annotation", name, ts, dur)

    def launch(self, ts: float, dur: float, activity: str, gpu_ts: float, gpu_dur: float, device_index: int = 0,
               runtime: str = "cudaLaunchKernel", category: str = "kernel") -> None:
        """A CUDA runtime call and the GPU activity it queued."""
        self._correlation += 1
        self._x("cuda_runtime", runtime, ts, dur, correlation=self._correlation)
        self._x(category, activity, gpu_ts, gpu_dur, pid=device_index, tid=STREAM, correlation=self._correlation, device=device_index)

    def memory(self, ts: float, size: int, total: int, address: int, device_type: int = 1) -> None:
        self.events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": CPU_PID, "tid": CPU_TID,
                            "ts": ts, "args": {"Bytes": size, "Total Allocated": total, "Addr": address,
                                               "Device Type": device_type, "Device Id": 0}})

    def steps(self, fill: Callable[["SyntheticTrace", float], None]) -> "SyntheticTrace":
        """Three steps, each filled by ``fill(trace, start)``."""
        for n in range(STEPS):
            start = 1000.0 + n * STEP_US
            self.annotation(f"ProfilerStep#{n + 2}", start, STEP_US)
            fill(self, start)
        return self

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({**self.header, "traceEvents": self.events}), encoding="utf-8")
        return path
