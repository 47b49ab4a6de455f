"""A tiny CPU training loop for the profile command tests (a few seconds)."""

import torch
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(512, 16)
y = torch.randn(512, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=32)
model = torch.nn.Sequential(torch.nn.Linear(16, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)

for step, (xb, yb) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(loss.item())
