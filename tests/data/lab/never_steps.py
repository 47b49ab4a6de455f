"""Builds a model and an optimizer, writes its pid next to itself, then never steps (the interrupt tests stop it)."""
import os
import sys
import time

import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with open(sys.argv[0] + ".pid", "w") as handle:
    handle.write(str(os.getpid()))
time.sleep(600)
