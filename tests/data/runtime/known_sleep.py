"""Loader-bound loop with a known sleep per sample beside operator-slot work in __getitem__.

argv[1] = num_workers, argv[2] = a file that gets one "start_ns end_ns" line per sleep
(time.time_ns, the profiler's clock), so a test can compare the time charged to the
sleep line with the time actually slept during the recorded steps.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

SLEEP_S = 0.003
# The operator-slot loop runs about 6 ms a sample. At 60 repeats (about 2 ms) the frame sampler sometimes
# took no sample inside it in a whole window (about one run in four): a sample is taken only when the
# main thread lets the sampler have the GIL, which a short burst of torch ops rarely does.
REPEATS = 200


class KnownSleep(Dataset):
    def __init__(self, log):
        self.log = log
        self.data = torch.randn(64, 16)

    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        started = time.time_ns()
        time.sleep(SLEEP_S)
        ended = time.time_ns()
        with open(self.log, "a") as handle:
            handle.write(f"{started} {ended}\n")
        i = index % 64
        row = torch.ones(16)
        for _ in range(REPEATS):
            row = self.data[i] * row + 0.001  # operator slots: no Python call event
        return row, torch.tensor(index % 2)


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    log = sys.argv[2] if len(sys.argv) > 2 else "/dev/null"
    loader = DataLoader(KnownSleep(log), batch_size=4, num_workers=workers)
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
