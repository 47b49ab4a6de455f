"""Loader-bound loop whose Dataset sleeps and then runs a per-element Python loop that lets go of the GIL every row.

argv[1] = a file that gets one "kind start_ns end_ns" line per sleep ("sleep"), per row of
the per-element loop ("loop") and per tensor made of a row ("tensor"), on time.time_ns (the profiler's clock), so a test
can compare what each line is charged with the time it really took in the recorded steps.
Each row ends in ``torch.tensor(row)``, which releases the GIL: a sampling thread only
ever gets the GIL there, so it would put the loop's time on that line.
"""
import random
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

SLEEP_S = 0.003
SIZE = 24  # ~4.5 ms of per-element loop a step: ~50 timer samples on it in 12 steps (16 gave ~2 ms; one loaded run read 0.41x)


class Jittered(Dataset):
    def __init__(self, log):
        self.log = open(log, "a")

    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        started = time.time_ns()
        time.sleep(SLEEP_S)
        self.log.write(f"sleep {started} {time.time_ns()}\n")
        rows = []
        for channel in torch.rand(3, SIZE, SIZE).tolist():
            for row in channel:
                began = time.time_ns()
                for x in range(SIZE):
                    row[x] = min(1.0, max(0.0, row[x] * random.gauss(1.0, 0.05)))
                self.log.write(f"loop {began} {time.time_ns()}\n")
                began = time.time_ns()
                rows.append(torch.tensor(row))
                self.log.write(f"tensor {began} {time.time_ns()}\n")
        return torch.stack(rows).flatten()[:16], index % 2


def main():
    log = sys.argv[1] if len(sys.argv) > 1 else "/dev/null"
    random.seed(0)
    loader = DataLoader(Jittered(log), batch_size=4)
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
