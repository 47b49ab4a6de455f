"""A loader-bound training script: per-sample Python work in ``__getitem__``, default loader knobs.

Hazards the linter reports: TT302 (no ``num_workers``), TT303 (no ``pin_memory``
although batches go to the GPU), TT306 (per-element comprehensions over each
sample in ``__getitem__``), TT301 (blocking ``.to(device)``).
At runtime the step waits on ``DataLoader.__next__``: the model is idle most of the time.
Tuned counterpart: ``tuned/slow_loader.py``.

    python examples/slow_loader.py --steps 20
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    """Synthetic samples whose loading does per-sample Python work, like decoding a file."""

    def __init__(self, size: int = 1024, features: int = 64, classes: int = 10) -> None:
        generator = torch.Generator().manual_seed(0)
        self.data = torch.randn(size, features, generator=generator)
        self.labels = torch.randint(0, classes, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.002)  # stands in for reading and decoding one file
        row = [float(value) for value in self.data[index]]  # Python-level per-sample work
        mean = sum(row) / len(row)
        scale = (sum((v - mean) ** 2 for v in row) / len(row)) ** 0.5 + 1e-6
        sample = torch.tensor([(v - mean) / scale for v in row])
        return sample, self.labels[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(SlowDataset(), batch_size=32, shuffle=True)

    step = 0
    while step < args.steps:
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.steps:
                break
    print(f"slow_loader: {step} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
