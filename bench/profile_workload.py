"""Workload for profile_bench.py: ``compute`` (an MLP step of ~10 ms), ``tiny`` (a sub-ms step of
small ops) or ``loader`` (a sleeping Dataset).

Prints one JSON line with its own per-step durations (seconds) at the end.
"""
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        time.sleep(0.001)
        return torch.randn(128)


def main():
    mode, steps = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(0)
    width, batch = (512, 128) if mode == "compute" else (128, 64)  # compute: ~10 ms steps; tiny: sub-ms
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(DataLoader(Slow(), batch_size=8)) if mode == "loader" else None
    fixed = torch.randn(batch, width)
    marks = [time.perf_counter()]
    for _ in range(steps):
        x = next(batches) if batches is not None else fixed
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        marks.append(time.perf_counter())
    result = json.dumps({"steps": [b - a for a, b in zip(marks, marks[1:])]})
    print(result)
    if os.environ.get("WORKLOAD_STEPS_OUT"):  # also readable when the profiler captures stdout
        with open(os.environ["WORKLOAD_STEPS_OUT"], "w") as handle:
            handle.write(result)


if __name__ == "__main__":
    main()
