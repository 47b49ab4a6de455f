"""Tuned ``eval_no_grad.py``: evaluation under ``torch.inference_mode()``, results kept on device.

    python examples/tuned/eval_no_grad.py --steps 20
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


@torch.inference_mode()
def evaluate(model, loader, criterion, max_batches: int):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total_loss = torch.zeros((), device=device)
    batches = 0
    for batch_idx, (x, y) in enumerate(loader):
        if batch_idx >= max_batches:
            break
        logits = model(x)
        total_loss += criterion(logits, y)
        correct += (logits.argmax(dim=1) == y).sum()
        batches += 1
    return total_loss / batches, correct


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
    print(f"tuned eval_no_grad: {args.steps} batches, loss {loss.item():.4f}, correct {correct.item()}")


if __name__ == "__main__":
    main()
