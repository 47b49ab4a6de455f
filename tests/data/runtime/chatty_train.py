"""A small training loop that prints to stderr first (for the output and progress tests)."""
import sys

import torch

print("hello from the script", file=sys.stderr)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(40):
    loss = model(torch.randn(4, 8)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
