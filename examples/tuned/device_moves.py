"""Tuned ``device_moves.py``: pinned, non-blocking copies; tensors made on the device.

Fixes: ``pin_memory`` in the loader (in-memory tensors need no workers),
``non_blocking=True`` copies, ``torch.zeros(..., device=device)`` instead of
``.to(device)``, a fused optimizer and bf16 autocast on CUDA.

    python examples/tuned/device_moves.py --steps 30
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
    train_loader = DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), BATCH, drop_last=True), batch_size=None,
                              pin_memory=device == "cuda")

    model = Classifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=device == "cuda")
    criterion = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(100):
        model.train()
        for images, targets in train_loader:
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            noise = torch.zeros(images.shape, device=device)
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=device == "cuda"):
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
    print(f"tuned device_moves: {step} steps on {device}, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
