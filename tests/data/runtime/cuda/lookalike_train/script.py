"""Softmax and matmul chains that are not attention (no TTR603): a classifier with an MLP head, SGD, on the GPU."""
import argparse

import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


def mlp(x, w1, w2):
    h = torch.relu(x @ w1.transpose(-2, -1))
    return h @ w2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    w1 = torch.randn(1024, 512, device=device, requires_grad=True)
    w2 = torch.randn(1024, 10, device=device, requires_grad=True)
    opt = torch.optim.SGD([w1, w2], lr=0.01)
    x = torch.randn(4096, 512, device=device)
    y = torch.randint(0, 10, (4096,), device=device)
    for step in range(args.steps):
        logits = mlp(x, w1, w2)
        probs = F.softmax(logits, dim=-1)
        loss = F.nll_loss(probs.clamp_min(1e-6).log(), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
