"""A training loop that records its own trace with plain torch.profiler, as users do (tests/runtime/analyze).

    python train_traced.py [--trace OUT.json | --tb DIR] [--no-stack] [--loader-sleep S] [--workers N] [--steps N]

With --trace the loop runs under ``profile(schedule=schedule(wait=1, warmup=1, active=3), with_stack=True)``
and ``export_chrome_trace``; with --tb under ``tensorboard_trace_handler(DIR, use_gzip=True)``.  Without
either it runs the same loop unprofiled, for ``torchtriage profile``.  ``--loader-sleep`` makes the
Dataset sleep per sample (a loader-bound loop); without it the step is one large matmul (~2 GFLOP).
``--workers`` is the DataLoader's ``num_workers`` (0 by default).
"""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, sleep):
        self.sleep = sleep

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        if self.sleep:
            time.sleep(self.sleep)
        return torch.randn(64), torch.randn(10)


def heavy(a, b):
    return torch.mm(a, b)


def train(steps, sleep, prof=None, workers=0):
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: no thread pool spinning against other work on a small machine
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    loader = DataLoader(Samples(sleep), batch_size=8, num_workers=workers)
    for step, (x, y) in enumerate(loader):
        if step >= steps:
            break
        out = model(x)
        c = heavy(a, b)
        loss = (out - y).square().mean() + c.mean() * 0
        loss.backward()
        opt.step()
        opt.zero_grad()
        if prof is not None:
            prof.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace")
    parser.add_argument("--tb")
    parser.add_argument("--no-stack", action="store_true")
    parser.add_argument("--loader-sleep", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if not args.trace and not args.tb:
        train(args.steps, args.loader_sleep, workers=args.workers)
        return
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    if args.tb:
        ready = tensorboard_trace_handler(args.tb, use_gzip=True)
    else:
        def ready(prof):
            prof.export_chrome_trace(args.trace)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 with_stack=not args.no_stack, on_trace_ready=ready) as prof:
        train(6, args.loader_sleep, prof, args.workers)


if __name__ == "__main__":
    main()
