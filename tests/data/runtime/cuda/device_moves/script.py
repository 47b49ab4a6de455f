"""CUDA-style code with avoidable host-to-device traffic; it still runs on the CPU.

Hazards the linter reports: TT301 (``.to(device)`` without ``non_blocking``),
TT305 (``torch.zeros(...).to(device)`` built on the CPU and copied every
step), TT302/TT303 (loader without workers or pinned memory), plus the
optimizer/precision rules when present (no ``fused=True``, no autocast).
Tuned counterpart: ``tuned/device_moves.py``.

    python examples/device_moves.py --steps 30
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
# On a GPU the step needs real work for a blocking copy to wait on: wider inputs, model and batches.
FEATURES, HIDDEN, BATCH = (1024, 4096, 512) if device == "cuda" else (128, 256, 64)


class Classifier(nn.Module):
    def __init__(self, features: int = FEATURES, hidden: int = HIDDEN, classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    features = torch.randn(2048, FEATURES)
    labels = torch.randint(0, 10, (2048,))
    dataset = TensorDataset(features, labels)
    # whole batches by one index each: no per-sample collate
    train_loader = DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), BATCH, drop_last=True), batch_size=None)

    model = Classifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(100):
        model.train()
        for images, targets in train_loader:
            images = images.to(device)
            targets = targets.to(device)
            noise = torch.zeros(images.shape).to(device)
            logits = model(images + noise)
            loss = criterion(logits, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == args.steps:
                break
        if step == args.steps:
            break
    print(f"device_moves: {step} steps on {device}, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
