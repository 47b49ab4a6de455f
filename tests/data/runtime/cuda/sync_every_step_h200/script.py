"""Host-device syncs every step: ``.item()`` / printing the loss, ``if loss.isnan()``.

Hazards the linter reports: TT101 (``.item()`` every step), TT102 (printing a
tensor every step), TT103 (an ``if`` on a tensor's value every step).
On a GPU each of these makes the CPU wait for the queued kernels, so the GPU
runs dry between steps (roughly 1-5 ms lost per sync).
Tuned counterpart: ``tuned/sync_every_step.py``.

    python examples/sync_every_step.py --steps 50
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
# On a GPU the step needs real work for a sync to cost anything: a wider model on bigger batches
# (8192 wide: about 9 ms of fp32 kernels a step on an H100).
BATCH, WIDTH = (1024, 8192) if device == "cuda" else (64, 128)


def make_data(samples: int = 8 * BATCH, features: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """A small in-memory dataset, kept on the device."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(samples, features, generator=generator)
    y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
    return x.to(device), y.to(device)


def batches(x: torch.Tensor, y: torch.Tensor, generator: torch.Generator):
    """One shuffled epoch of whole batches, each taken by one index op on the device (no per-sample Python)."""
    order = torch.randperm(len(x), device=device, generator=generator)
    for start in range(0, len(x) - BATCH + 1, BATCH):
        index = order[start:start + BATCH]
        yield x[index], y[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    torch.manual_seed(0)

    model = nn.Sequential(nn.Linear(32, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.BCEWithLogitsLoss()
    x_all, y_all = make_data()
    generator = torch.Generator(device=device).manual_seed(0)

    step, running = 0, 0.0
    while step < args.steps:
        for i, (x, y) in enumerate(batches(x_all, y_all, generator)):
            loss = criterion(model(x), y)
            if loss.isnan():
                raise RuntimeError("loss is NaN")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
            print(f"step {step} loss {loss}")
            step += 1
            if step >= args.steps:
                break
    print(f"sync_every_step: {step} steps, mean loss {running / step:.4f}")


if __name__ == "__main__":
    main()
