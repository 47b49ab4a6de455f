"""torch's own floor for a profiled window of the starvation lab: plain ``torch.profiler``, no torchtriage.

Runs ``starvation_lab.py``'s model and loader for two warm-up steps, then
records ``STEPS`` steps with the settings ``torchtriage profile`` uses on CPU
(``with_stack=True``, ``profile_memory=True``, no shapes), and prints one JSON
line: the events in the window (a walk of torch's event tree), the seconds of
``prof.stop()`` (torch's post-processing) and of ``export_chrome_trace``, and
the process's RSS before recording and its peak.  ``bench/anchors.py`` sets the
heavy lab's rows against these figures.

    python bench/torch_floor.py [STEPS]     # default 5 (~440k events, as the heavy lab's window)
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import starvation_lab as lab  # noqa: E402  (bench/starvation_lab.py)


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.manual_seed(0)
    random.seed(0)
    loader = iter(DataLoader(lab.Photos(), batch_size=8, shuffle=True, num_workers=0))
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(16 * lab.SIZE * lab.SIZE, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        images, labels = next(loader)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    before = _rss_mib()
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=True, profile_memory=True)
    prof.start()
    for _ in range(steps):
        step()
        prof.step()
    started = time.perf_counter()
    prof.stop()
    stop_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
        export_s = time.perf_counter() - started
    events, stack = 0, list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        events += 1
        stack.extend(node.children)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"steps": steps, "events": events, "stop_s": round(stop_s, 3), "export_s": round(export_s, 3),
                      "rss_before_mib": round(before), "peak_mib": round(peak)}))


if __name__ == "__main__":
    main()
