"""Loader-bound training for `fix --verify`: each sample waits on slow storage, much longer than a step computes.

The batches are built in the training process (no workers), so every step first
waits for its 32 reads; with several workers the reads of the next batches run
side by side, while one worker only moves the same wait out of the process.
The wait is a sleep (a read from network storage), so the speed-up does not
depend on free cores: the test stays honest on a loaded machine.
"""
import time

import torch
from torch.utils.data import DataLoader, Dataset

READ_S = 0.001  # one sample's read


class SlowStorage(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(READ_S)
        generator = torch.Generator().manual_seed(index)
        x = torch.randn(256, generator=generator)
        return x, x[:8].sum(dim=0, keepdim=True)


loader = DataLoader(SlowStorage(), batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 60:
        break
