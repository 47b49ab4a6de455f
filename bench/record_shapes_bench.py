"""What reading dtypes costs the profile: ``record_shapes`` on vs off, and the dtype recorder in the walk.

In one process, the agent's profiler settings (CPU activity, ``with_stack``,
``profile_memory``) record ``--steps`` steps of a workload, alternately with
``record_shapes`` off (as before TTR503) and on (now), ``--repeat`` times each.
Measured in CPU seconds of this thread (``time.thread_time``), steadier than
wall time on a shared machine: the recorded steps (per step), torch's
post-processing (``stop``), the trace export, and the agent's walk of the
event tree without and with the ``DtypeRecorder``.  Medians.

Workloads: ``tiny`` and ``compute`` as in profile_workload.py (4 Linear layers,
128 wide batch 64 / 512 wide batch 128) and ``many_ops`` (300 Linear(16, 16)
layers on batch 4: ~1,800 ops a step, the op-heavy case).

    PYTHONPATH=server python bench/record_shapes_bench.py [--repeat 5] [--steps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "server"))

from torchtriage.runtime.agent.collect import Collector  # noqa: E402
from torchtriage.runtime.agent.dtypes import DtypeRecorder  # noqa: E402
from torchtriage.runtime.agent.usercode import UserCode  # noqa: E402

WORKLOADS = {"tiny": (128, 64, 4), "compute": (512, 128, 4), "many_ops": (16, 4, 300)}


def workload(name: str) -> Callable[[], None]:
    width, batch, layers = WORKLOADS[name]
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, width)

    def step() -> None:
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def once(step: Callable[[], None], steps: int, shapes: bool, folder: str) -> dict[str, float]:
    clock = time.thread_time
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=shapes, profile_memory=True, with_stack=True)
    prof.start()
    times = []
    for _ in range(steps):
        with torch.profiler.record_function(f"ProfilerStep#{len(times)}"):
            start = clock()
            step()
            times.append(clock() - start)
    start = clock()
    prof.stop()
    stop = clock() - start
    start = clock()
    prof.export_chrome_trace(os.path.join(folder, f"trace-{shapes}.json"))
    export = clock() - start
    tree = prof.profiler.kineto_results.experimental_event_tree()
    user = UserCode([str(HERE)], [os.path.dirname(torch.__file__)])
    walks = {}
    for with_dtypes in (False, True):
        start = clock()
        Collector(user, str(HERE), dtypes=DtypeRecorder(user.is_user, user.absolute) if with_dtypes else None).collect(tree)
        walks[with_dtypes] = clock() - start
    return {"step_ms": statistics.median(times) * 1e3, "stop_s": stop, "export_s": export,
            "walk_s": walks[False], "walk_dtypes_s": walks[True], "trace_mb": os.path.getsize(os.path.join(folder, f"trace-{shapes}.json")) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'workload':9} {'shapes':6} {'step CPU ms':>11} {'stop s':>7} {'export s':>8} {'walk s':>7} {'walk+dtypes s':>13} {'trace MB':>8}")
    for name in args.only.split(","):
        step = workload(name)
        for _ in range(3):
            step()
        plain = []
        for _ in range(args.repeat * args.steps):
            start = time.thread_time()
            step()
            plain.append(time.thread_time() - start)
        print(f"{name:9} {'plain':6} {statistics.median(plain) * 1e3:11.2f}")
        runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.repeat):
                for shapes in (False, True):
                    runs[shapes].append(once(step, args.steps, shapes, folder))
        for shapes in (False, True):
            med = {k: statistics.median(r[k] for r in runs[shapes]) for k in runs[shapes][0]}
            print(f"{name:9} {'on' if shapes else 'off':6} {med['step_ms']:11.2f} {med['stop_s']:7.3f} {med['export_s']:8.3f} "
                  f"{med['walk_s']:7.3f} {med['walk_dtypes_s']:13.3f} {med['trace_mb']:8.2f}", flush=True)


if __name__ == "__main__":
    main()
