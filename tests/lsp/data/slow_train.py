"""A training loop that never gets going: the cancel test kills it."""

import os
import sys
import time

import torch

with open(sys.argv[0] + ".pid", "w") as handle:
    handle.write(str(os.getpid()))
print("started", flush=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in range(10**9):
    time.sleep(60)
    loss = model(torch.ones(1, 4)).sum()
    loss.backward()
    opt.step()
