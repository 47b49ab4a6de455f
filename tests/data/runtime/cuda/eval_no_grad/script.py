"""Evaluation without ``torch.no_grad()``: autograd records a graph nobody uses.

The eval loop builds and keeps the backward graph for every batch (extra time
and memory), reads ``.item()`` per batch (TT101) and keeps the loss tensors
(TT201).  Tuned counterpart: ``tuned/eval_no_grad.py``.

    python examples/eval_no_grad.py --steps 20
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def evaluate(model, loader, criterion, max_batches: int):
    model.eval()
    correct, batch_losses = 0, []
    for batch_idx, (x, y) in enumerate(loader):
        if batch_idx >= max_batches:
            break
        logits = model(x)
        loss = criterion(logits, y)
        batch_losses.append(loss)
        correct += (logits.argmax(dim=1) == y).sum().item()
    return sum(batch_losses) / len(batch_losses), correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(2048, 256, device=device)
    y = torch.randint(0, 10, (2048,), device=device)
    loader = DataLoader(TensorDataset(x, y), batch_size=64)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    loss, correct = evaluate(model, loader, nn.CrossEntropyLoss(), args.steps)
    print(f"eval_no_grad: {args.steps} batches, loss {loss.item():.4f}, correct {correct}")


if __name__ == "__main__":
    main()
