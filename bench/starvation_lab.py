"""A newcomer's starvation lab: a loader-bound training loop (bench/profile_cost_bench.py runs it).

The Dataset sleeps a few milliseconds per sample (a slow disk) and augments
each image with a per-pixel Python loop (random gain, clamped) and a per-row
tensor rebuild, so every step waits for the loader, makes ~100,000 Python
calls and issues about 2,000 tiny ops.  ``python bench/starvation_lab.py
[steps] [num_workers]`` (defaults: 30 steps, no workers).
"""
import random
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

SIZE = 24  # 3x24x24 images


def jitter(image):
    """Brightness jitter, one pixel at a time (the slow way a first attempt writes it)."""
    rows = []
    for channel in image.tolist():
        for row in channel:
            for x in range(SIZE):
                row[x] = min(1.0, max(0.0, row[x] * random.gauss(1.0, 0.05)))
            rows.append(torch.tensor(row))
    return torch.stack(rows).view(3, SIZE, SIZE)


class Photos(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(0.003)  # reading the file
        return jitter(torch.rand(3, SIZE, SIZE)), index % 10


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    torch.manual_seed(0)
    random.seed(0)
    loader = DataLoader(Photos(), batch_size=8, shuffle=True, num_workers=workers)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * SIZE * SIZE, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (images, labels) in enumerate(loader):
        if step == steps:
            break
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"trained {steps} steps")


if __name__ == "__main__":
    main()
