"""A small CNN training loop with the hazards torch's profiler pattern matcher looks for, recorded with plain
torch.profiler (``record_shapes`` and ``with_stack`` on) as users record it (tests/runtime/analyze/test_trace_patterns.py).

    python patterns_traced.py --trace OUT.json [--clean] [--no-stack] [--steps N]

By default the loop has each hazard: an optimizer on its single-tensor loop (``foreach=False``), gradients
zeroed instead of dropped (``zero_grad(set_to_none=False)``), a Conv2d with a bias right before a
BatchNorm2d, a Python loop that writes a tensor one element at a time, and a DataLoader without workers
whose Dataset sleeps per sample.  ``--clean`` runs the same model the fixed way: a fused optimizer,
``set_to_none=True``, a Conv2d without bias, the loop vectorised, and no per-sample sleep.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, sleep):
        self.sleep = sleep

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        if self.sleep:
            time.sleep(self.sleep)
        return torch.randn(3, 16, 16), index % 10


def class_weights(buckets=32):
    weights = torch.empty(buckets)
    for i in range(buckets):
        weights[i] = i * 0.1 + 1.0
    return weights


def class_weights_vectorised(buckets=32):
    return torch.arange(buckets) * 0.1 + 1.0


def train(steps, clean, prof=None):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=not clean), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(),
                          nn.Linear(16 * 16 * 16, 10))
    if clean:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    loader = DataLoader(Images(0.0 if clean else 0.002), batch_size=8)
    for step, (x, y) in enumerate(loader):
        if step >= steps:
            break
        weights = class_weights_vectorised() if clean else class_weights()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y, weight=weights.narrow(0, 0, 10))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=clean)
        if prof is not None:
            prof.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", required=True)
    parser.add_argument("--clean", action="store_true")
    parser.add_argument("--no-stack", action="store_true")
    args = parser.parse_args()
    from torch.profiler import ProfilerActivity, profile, schedule

    def ready(prof):
        prof.export_chrome_trace(args.trace)

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 record_shapes=True, with_stack=not args.no_stack, on_trace_ready=ready) as prof:
        train(6, args.clean, prof)


if __name__ == "__main__":
    main()
