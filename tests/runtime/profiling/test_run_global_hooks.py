"""A script with its own global optimizer hook and DataLoader patch runs to its end under the profiler.

The agent's step detector used to take its optimizer hook out while torch iterated over the global hooks
(when the window ended inside ``optimizer.step()``): a script with a hook after it crashed with
"OrderedDict mutated during iteration"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = '''
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DataLoader, TensorDataset, dataloader

seen = {"steps": 0, "batches": 0}
register_optimizer_step_post_hook(lambda *_: seen.__setitem__("steps", seen["steps"] + 1))
plain_next = dataloader._BaseDataLoaderIter.__next__
def counted(self):
    seen["batches"] += 1
    return plain_next(self)
dataloader._BaseDataLoaderIter.__next__ = counted

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(256, 8), torch.randn(256, 1)), batch_size=8)
for x, y in loader:
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("hooks saw", seen["steps"], "steps and", seen["batches"], "batches")
'''


@pytest.mark.slow
def test_a_script_with_its_own_global_hooks_runs_to_its_end(tmp_path: Path) -> None:
    script = tmp_path / "hooked.py"
    script.write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--quiet", "--full", "--active", "3",
                             "--out", str(out), str(script)], capture_output=True, text=True, timeout=300)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["status"]["status"] == "completed", report["status"]
    assert result.returncode == 0, result.stderr[-2000:]
    # 32 batches, and the call that ends the loop
    assert "hooks saw 32 steps and 33 batches" in (out / "output.log").read_text(encoding="utf-8")
