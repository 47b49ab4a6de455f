"""Tuned ``graph_leak.py``: accumulate detached values, so each step's graph is freed.

    python examples/tuned/graph_leak.py --steps 40
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
CLASSES = 64


def train_one_epoch(model, loader, optimizer, max_steps: int):
    total = torch.zeros((), device=device)
    losses = []
    correct = torch.zeros((), device=device, dtype=torch.long)
    for step, (x, y) in enumerate(loader):
        if step >= max_steps:
            break
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
        losses.append(loss.detach())
        correct += (logits.argmax(dim=1) == y).sum()  # counted on the device: nothing of the graph kept
    return total / max(len(losses), 1), losses, correct.float() / max(len(losses) * 128, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(16384, 128)  # on the CPU, where data usually starts
    y = torch.randint(0, CLASSES, (16384,))
    dataset = TensorDataset(x, y)
    # whole batches by one index each (no per-sample collate), pinned on a GPU so their copies can overlap
    loader = DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), 128, drop_last=True), batch_size=None,
                        pin_memory=device == "cuda")
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, fused=device == "cuda")

    done, mean, accuracy = 0, torch.zeros(()), torch.zeros(())
    while done < args.steps:
        mean, losses, accuracy = train_one_epoch(model, loader, optimizer, args.steps - done)
        done += len(losses)
    print(f"tuned graph_leak: {done} steps, mean loss {mean.item():.4f}, accuracy {accuracy.item():.3f}")


if __name__ == "__main__":
    main()
