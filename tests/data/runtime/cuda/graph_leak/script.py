"""Memory that grows every step: losses kept with their autograd graphs.

Hazards the linter reports: TT201 (``total += loss`` and ``losses.append(loss)``
keep every step's graph alive until the epoch ends).
At runtime peak memory climbs step over step.
Tuned counterpart: ``tuned/graph_leak.py``.

    python examples/graph_leak.py --steps 40
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def train_one_epoch(model, loader, optimizer, max_steps: int):
    total = 0.0
    losses = []
    for step, (x, y) in enumerate(loader):
        if step >= max_steps:
            break
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss
        losses.append(loss)
    return total / max(len(losses), 1), losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(4096, 128, device=device)
    y = torch.randint(0, 16, (4096,), device=device)
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 16)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    done, mean = 0, torch.zeros(())
    while done < args.steps:
        mean, losses = train_one_epoch(model, loader, optimizer, args.steps - done)
        done += len(losses)
    print(f"graph_leak: {done} steps, mean loss {mean.detach().item():.4f}")


if __name__ == "__main__":
    main()
