"""Compute bound: a wide MLP on a large batch, in float32.

Almost all step time is in a few large matrix multiplies (``aten::addmm`` /
``aten::mm``).  No loader or sync hazards: the fixes are lower precision
(bf16 autocast on hardware that supports it), Tensor-Core-friendly shapes and
``torch.compile`` max-autotune, not loop changes.

    python examples/big_matmul.py --steps 8
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
# A GPU finishes the CPU's batch in a fraction of a millisecond: give it one that keeps it busy.
BATCH = 8192 if device == "cuda" else 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(BATCH, 1024, device=device)
    target = torch.randn(BATCH, 1024, device=device)

    for step in range(args.steps):
        out = model(data)
        loss = nn.functional.mse_loss(out, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(f"big_matmul: {args.steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
