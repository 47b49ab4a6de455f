"""Launch/dispatch bound: hundreds of tiny layers on a tiny batch.

Every step runs a few thousand small operators whose fixed per-op cost
(Python dispatch on the CPU, 5-20 us kernel launches on a GPU) dwarfs the
arithmetic.  The fixes are ``torch.compile`` (fewer, fused kernels), bigger
batches, and a fused/foreach optimizer.  Statically this script is clean of
per-step sync and loader hazards; the runtime profile is what shows the
problem (high CPU op count, tiny ops).

    python examples/tiny_ops.py --steps 30
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class TinyBlocks(nn.Module):
    """``depth`` residual blocks of a ``width``-wide linear layer."""

    def __init__(self, depth: int = 200, width: int = 16) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + torch.tanh(block(x)) * 0.1
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = TinyBlocks().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    inputs = torch.randn(args.steps, 4, 16, device=device)
    targets = torch.randn(args.steps, 4, 1, device=device)

    for step in range(args.steps):
        x, y = inputs[step], targets[step]
        loss = (model(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"tiny_ops: {args.steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
