"""Causal self-attention written out by hand (TT508 statically, TTR603 at runtime), trained with SGD on the GPU."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
LENGTH = 1024 if device == "cuda" else 128


class Block(nn.Module):
    def __init__(self, dim: int = 256, heads: int = 4, length: int = LENGTH):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(length, length)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.causal[:T, :T] == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = weights @ v
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Block().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, LENGTH, 256, device=device)
    for step in range(args.steps):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
