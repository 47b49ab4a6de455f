"""`torchtriage profile` links the static findings `torchtriage check` gives: the project's
`[tool.torchtriage]` settings apply, and a hot file is analysed within its project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TRAIN = '''import torch
from helpers import make_loader

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in make_loader():
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(loss)
    value = loss.item()
'''
HELPERS = '''import time
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(8), torch.randn(1)


def make_loader():
    return DataLoader(Slow(), batch_size=8)
'''


@pytest.mark.slow
def test_profile_uses_the_projects_settings_and_its_other_files(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchtriage]\nignore = ["TT102"]\n', encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    checked = subprocess.run([sys.executable, "-m", "torchtriage", "check", "--format", "json", "--exit-zero", "train.py", "helpers.py"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
    expected = {(f["code"], Path(f["path"]).name, f["line"]) for f in json.loads(checked.stdout)}
    subprocess.run([sys.executable, "-m", "torchtriage", "profile", "--quiet", "--active", "3", "--out", "run", "train.py"],
                   cwd=tmp_path, timeout=300, check=True)
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    linked = {(f["code"], Path(f["path"]).name, f["line"]) for f in report["static_findings"]}
    assert ("TT101", "train.py", 12) in linked
    assert ("TT302", "helpers.py", 16) in linked  # the loader is built in another file of the project
    assert not any(code == "TT102" for code, _, _ in linked)  # ignored by the project's settings
    assert linked == expected
    assert all(Path(f["path"]).is_absolute() for f in report["static_findings"])
