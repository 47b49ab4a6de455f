"""Loader-bound loop: the Dataset sleeps in __getitem__; argv[1] = num_workers, argv[2] = start method."""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Sleepy(Dataset):
    def __len__(self):
        return 400

    def __getitem__(self, index):
        time.sleep(0.004)
        return torch.randn(16), torch.tensor(index % 2)


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    context = sys.argv[2] if len(sys.argv) > 2 else None
    loader = DataLoader(Sleepy(), batch_size=4, num_workers=workers, multiprocessing_context=context)
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
