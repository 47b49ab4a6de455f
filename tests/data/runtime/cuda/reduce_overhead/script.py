"""A small MLP compiled with mode="reduce-overhead" (CUDA graphs on a GPU): few launches a step, each a graph replay."""
import argparse

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(*[layer for _ in range(8) for layer in (nn.Linear(256, 256), nn.ReLU())]).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, mode="reduce-overhead" if device == "cuda" else "default")
    x = torch.randn(64, 256, device=device)
    for step in range(args.steps):
        loss = compiled(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
