"""Memory that grows every step: losses and logits kept with their autograd graphs.

Hazards the linter reports: TT201 (``total += loss``, ``losses.append(loss)`` and
``outputs.append(logits)`` keep every step's graph and tensors alive until the
epoch ends).
At runtime peak memory climbs step over step.
Tuned counterpart: ``tuned/graph_leak.py``.

    python examples/graph_leak.py --steps 40
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
    total = 0.0
    losses, outputs, targets = [], [], []
    for step, (x, y) in enumerate(loader):
        if step >= max_steps:
            break
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss
        losses.append(loss)
        outputs.append(logits)  # for the epoch's accuracy
        targets.append(y)
    accuracy = (torch.cat(outputs).argmax(dim=1) == torch.cat(targets)).float().mean() if outputs else torch.zeros(())
    return total / max(len(losses), 1), losses, accuracy


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
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    done, mean, accuracy = 0, torch.zeros(()), torch.zeros(())
    while done < args.steps:
        mean, losses, accuracy = train_one_epoch(model, loader, optimizer, args.steps - done)
        done += len(losses)
    print(f"graph_leak: {done} steps, mean loss {mean.detach().item():.4f}, accuracy {accuracy.item():.3f}")


if __name__ == "__main__":
    main()
