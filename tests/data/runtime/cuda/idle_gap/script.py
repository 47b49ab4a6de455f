"""The host stops between steps to do its own bookkeeping (a 4 ms pause, no sync): the GPU sits idle at that line (TTR604)."""
import argparse
import time

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
BATCH = 1024 if device == "cuda" else 64


def bookkeeping(step: int) -> None:
    time.sleep(0.004)  # stands for host work: writing logs, building the next batch in Python


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, 1024, device=device)
    for step in range(args.steps):
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bookkeeping(step)


if __name__ == "__main__":
    main()
