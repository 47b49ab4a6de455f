"""Tiny DDP training loop on CPU (gloo) for the multi-process tests; run it under torchrun.

Options (all optional): ``--steps N``; ``--slow-rank K --slow-ms M``: rank K's Dataset
sleeps M ms per batch (a straggler whose extra time is data loading);
``--crash-rank K --crash-step S``: rank K raises at step S; ``--accumulate N``:
N micro-batches per optimizer step, every one synchronised (no ``no_sync``);
``--find-unused``: DDP with ``find_unused_parameters=True``; ``--spare``: a layer
that forward never uses; ``--no-sync``: the accumulation micro-batches but the
last run under ``model.no_sync()``; ``--hang-rank K --hang-step S``: rank K
ignores SIGTERM and sleeps for an hour at step S (the others block in the next
all-reduce); ``--backend nccl``: NCCL, each rank on ``cuda:LOCAL_RANK`` (the GPU runs).
"""
import argparse
import contextlib
import os
import signal
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Batches(Dataset):
    """Random samples; one rank may be told to be slow."""

    def __init__(self, size, delay_s):
        self.size = size
        self.delay_s = delay_s

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if self.delay_s:
            time.sleep(self.delay_s / 8)  # batches of 8
        g = torch.Generator().manual_seed(index)
        return torch.randn(32, generator=g), index % 4


class Net(torch.nn.Module):
    def __init__(self, spare):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        if spare:  # never used in forward: what find_unused_parameters is for
            self.spare = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--crash-step", type=int, default=4)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--find-unused", action="store_true")
    parser.add_argument("--spare", action="store_true")
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=3)
    parser.add_argument("--no-sync", action="store_true")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', '0')}") if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    delay = args.slow_ms / 1000.0 if rank == args.slow_rank else 0.0
    data = Batches(8 * args.steps * args.accumulate * dist.get_world_size(), delay)
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    model = DistributedDataParallel(Net(args.spare).to(device), find_unused_parameters=args.find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    micro = 0
    step = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        micro += 1
        last = micro % args.accumulate == 0
        sync = contextlib.nullcontext() if last or not args.no_sync else model.no_sync()
        with sync:
            loss = torch.nn.functional.cross_entropy(model(x), y) / args.accumulate
            loss.backward()
        if not last:
            continue
        opt.step()
        opt.zero_grad()
        step += 1
        if rank == args.crash_rank and step == args.crash_step:
            raise RuntimeError(f"rank {rank} crashed on purpose at step {step}")
        if rank == args.hang_rank and step == args.hang_step:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)
    print(f"rank {rank} done after {step} steps (pid {os.getpid()})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
