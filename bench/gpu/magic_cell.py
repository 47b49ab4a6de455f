"""The ``%%torchtriage`` magic on the GPU: two cells in an in-process IPython shell, the second profiled.

    python bench/gpu/magic_cell.py RUN_DIR [--device cuda|cpu]

In [1] builds a model on the device; In [2] trains it under ``%%torchtriage`` with a ``.item()`` each step
(the magic's in-kernel agent, ``runtime/agent/inkernel.py``). The run folder (agent.json, report.json, the
cell files) is RUN_DIR; what the magic displayed is RUN_DIR/displayed.txt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SETUP = """\
import torch
from torch import nn
device = "{device}"
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
data = torch.randn(2048, 1024, device=device)
"""
TRAIN = """\
%%torchtriage --device {device} --out {out}
for step in range(40):
    loss = model(data).square().mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print(f"step {{step}}: {{loss.item():.4f}}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args()
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    args.run_dir.mkdir(parents=True, exist_ok=True)
    results = [shell.run_cell("%load_ext torchtriage", store_history=True),
               shell.run_cell(SETUP.format(device=args.device), store_history=True),
               shell.run_cell(TRAIN.format(device=args.device, out=args.run_dir), store_history=True)]
    failed = [r for r in results if not r.success]
    (args.run_dir / "displayed.txt").write_text("\n".join(repr(r.error_in_exec or r.error_before_exec) for r in failed) or "ok",
                                                encoding="utf-8")
    print("magic:", "ok" if not failed else failed, "report:", (args.run_dir / "report.json").exists())
    return 1 if failed or not (args.run_dir / "report.json").exists() else 0


if __name__ == "__main__":
    sys.exit(main())
