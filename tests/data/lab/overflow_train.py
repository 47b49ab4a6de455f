"""Activations far above fp16's largest value (65504): fine in fp32 and bf16, inf in fp16.

A first layer with large weights on large inputs, as happens with unnormalised
data: in float16 its outputs overflow to inf and the loss becomes NaN.
"""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
with torch.no_grad():
    model[0].weight.mul_(1000.0)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-9)
inputs = torch.randn(8, 32, 64) * 100.0
targets = torch.randn(8, 32, 10)
for step in range(100):
    loss = nn.functional.mse_loss(model(inputs[step % 8]), targets[step % 8]) / 1e9
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"overflow_train: loss {loss.item():.4g}")
