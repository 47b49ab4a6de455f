"""A small classifier trained on synthetic batches, for the lab tests.

``--steps N`` (default 200); ``--raise-at K`` raises at step K, like a script
with a bug; ``--functional-loss`` is the default path.  No seed in the script:
the lab seeds every configuration the same way.
"""
import argparse

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU())
        self.head = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--raise-at", type=int, default=-1)
    args = parser.parse_args()
    model = Classifier()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(16, 48, 64)
    labels = torch.randint(0, 10, (16, 48))
    for step in range(args.steps):
        if step == args.raise_at:
            raise ValueError(f"bad batch at step {step}")
        x, y = inputs[step % 16], labels[step % 16]
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(f"lab_train: {args.steps} steps, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
