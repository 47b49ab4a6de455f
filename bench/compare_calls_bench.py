"""How often ``torchtriage compare`` calls a change that is not there, and finds one that is.

Pairs of real ``torchtriage profile`` runs (default window) of small scripts of our own, compared
with ``torchtriage compare --format json``:

* identical pairs: the same script twice (a sleep-bound step, a compute-bound step, a loader with
  two workers whose steps alternate) -- every call other than "none" is a false call;
* known speed-ups: a per-element Python loop -> vectorised, a loader without workers -> two workers
  (``persistent_workers``), and a 1.6x longer compute step -- every "none" or "slower" is a miss.

    python bench/compare_calls_bench.py                          # 5 pairs of each case, single runs
    python bench/compare_calls_bench.py --pairs 10
    python bench/compare_calls_bench.py --interleaved 2          # compare --profile A B --repeat 2 instead

Single runs are two ``torchtriage profile`` runs and a ``torchtriage compare``; ``--interleaved N`` uses
``torchtriage compare --profile BEFORE AFTER --repeat N`` (before, after, before, after ...), the protocol
the docs advise for a small difference.

Prints a Markdown table: the case, its pairs, the calls, the false-call or detection rate, and the
median interval width as a share of the before step.  Nothing is asserted (a noisy machine moves
the numbers); the tests in tests/runtime/compare/test_compare_calls.py pin the behaviour.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

SLEEPY = '''\
import time
import torch
model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(60):
    time.sleep(0.04)
    loss = model(torch.ones(8, 32)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
'''

COMPUTE = '''\
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(512, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
for step in range(60):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''

LOADER = '''\
import time
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 1600

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((64,), float(i % 7)), torch.tensor(i % 10)


torch.set_num_threads(1)
model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=16, WORKERS)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''

LOOPED = '''\
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(256, 64)
for step in range(40):
    scale = torch.empty(256)
    for i in range(256):
        scale[i] = data[i].abs().max()
    loss = model(data / scale[:, None]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''
VECTORISED = LOOPED.replace("    scale = torch.empty(256)\n    for i in range(256):\n        scale[i] = data[i].abs().max()\n",
                            "    scale = data.abs().amax(dim=1)\n")

IDENTICAL = {
    "sleep-bound step": (SLEEPY, SLEEPY),
    "compute-bound step": (COMPUTE.replace("WIDTH", "1024"), COMPUTE.replace("WIDTH", "1024")),
    "two workers (alternating steps)": (LOADER.replace("WORKERS", "num_workers=2, persistent_workers=True"),) * 2,
}
SPEEDUPS = {
    "Python loop -> vectorised": (LOOPED, VECTORISED),
    "no workers -> two workers": (LOADER.replace("WORKERS", "num_workers=0"),
                                  LOADER.replace("WORKERS", "num_workers=2, persistent_workers=True")),
    "compute step 1.6x shorter": (COMPUTE.replace("WIDTH", "1600"), COMPUTE.replace("WIDTH", "1000")),
}


def profile(folder: Path, name: str, text: str) -> None:
    (folder / "train.py").write_text(text)
    subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", f"runs/{name}", "train.py"],
                   cwd=folder, check=True, capture_output=True, timeout=600)


def compare(folder: Path, a: str, b: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "torchtriage", "compare", f"runs/{a}", f"runs/{b}", "--format", "json", "--no-write"],
                          cwd=folder, check=True, capture_output=True, text=True, timeout=600)
    return json.loads(proc.stdout)


def interleaved(folder: Path, name: str, before: str, after: str, repeat: int) -> dict:
    """compare.json of ``torchtriage compare --profile`` on the two texts."""
    (folder / "before").mkdir(exist_ok=True)
    (folder / "after").mkdir(exist_ok=True)
    (folder / "before" / "train.py").write_text(before)
    (folder / "after" / "train.py").write_text(after)
    subprocess.run([sys.executable, "-m", "torchtriage", "compare", "--profile", "before/train.py", "after/train.py", "--repeat", str(repeat),
                    "--out", f"runs/{name}", "--quiet"], cwd=folder, check=True, capture_output=True, timeout=1200)
    return json.loads((folder / "runs" / name / "after" / "compare.json").read_text())


def run_case(before: str, after: str, pairs: int, repeat: int = 0) -> tuple[Counter, list[float], list[int]]:
    calls: Counter = Counter()
    widths, steps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(pairs):
            if repeat:
                step = interleaved(folder, f"pair{i}", before, after, repeat)["step_time"]
            else:
                profile(folder, f"a{i}", before)
                profile(folder, f"b{i}", after)
                step = compare(folder, f"a{i}", f"b{i}")["step_time"]
            calls[step["change"]] += 1
            interval = step.get("interval")
            if interval and step["before_ms"] > 0:
                widths.append((interval["high_ms"] - interval["low_ms"]) / step["before_ms"])
                steps.append(interval["steps"]["before"])
    return calls, widths, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="pairs per case (default 5)")
    parser.add_argument("--interleaved", type=int, default=0, metavar="N",
                        help="compare --profile BEFORE AFTER --repeat N instead of two single runs")
    parser.add_argument("-k", "--keyword", default="", help="only the cases whose name contains this")
    args = parser.parse_args()
    protocol = f"compare --profile --repeat {args.interleaved}" if args.interleaved else "single runs"
    print(f"protocol: {protocol}", flush=True)
    rows = ["| case | kind | pairs | faster / none / slower | rate | median steps | median interval width |", "|---|---|---|---|---|---|---|"]
    for kind, cases in (("identical", IDENTICAL), ("speed-up", SPEEDUPS)):
        for name, (before, after) in cases.items():
            if args.keyword not in name:
                continue
            calls, widths, steps = run_case(before, after, args.pairs, args.interleaved)
            n = sum(calls.values())
            if kind == "identical":
                rate = f"false calls {(n - calls['none']) / n:.0%}"
            else:
                rate = f"detected {calls['faster'] / n:.0%}"
            width = f"{statistics.median(widths):.1%} of the step" if widths else "-"
            median_steps = f"{statistics.median(steps):.0f}" if steps else "-"
            rows.append(f"| {name} | {kind} | {n} | {calls['faster']} / {calls['none']} / {calls['slower']} | {rate} | {median_steps} | {width} |")
            print(rows[-1], flush=True)
    print("\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
