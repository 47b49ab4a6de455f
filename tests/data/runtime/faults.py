"""Fault cases chosen by argv[1]: raise | exit | never | hang | literal VALUE; a normal loop otherwise."""
import ast
import sys
import time

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "literal":  # a config value parsed from the command line, as minGPT's adder.py does: an unquoted string fails
    value = ast.literal_eval(sys.argv[2])
if mode == "never":
    time.sleep(60)
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
for step in range(1000):
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
    if mode == "exit" and step == 2:
        sys.exit(3)
    if mode == "raise" and step == 6:
        raise ValueError("boom at step 6")
    if mode == "hang" and step == 6:
        time.sleep(600)
