"""``torchtriage check`` on a folder analyses it as one project; a single file is analysed
within the project its markers (pyproject/setup/git) delimit."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import write

TRAIN = """
import argparse
import torch
from engine import train_one_epoch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
for epoch in range(3):
    train_one_epoch(model, loader, opt, torch.device(parser.parse_args().device))
"""

ENGINE = """
import torch
from metrics import log_step

def train_one_epoch(model, loader, opt, device):
    for x, y in loader:
        x = x.to(device)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        log_step(loss)
"""

METRICS = """
import torch

def log_step(loss):
    value = loss.item()
    return value

def log_epoch(loss):
    return loss.item()
"""


def _project(root: Path) -> None:
    write(root / "train.py", TRAIN)
    write(root / "engine.py", ENGINE)
    write(root / "metrics.py", METRICS)


def test_folder_is_one_project(tt, tmp_path: Path) -> None:
    _project(tmp_path / "proj")
    result = tt("check", "proj", "--format", "json")
    findings = json.loads(result.stdout)
    by_place = {(Path(f["path"]).name, f["line"], f["code"]): f for f in findings}
    sync = by_place[("metrics.py", 4, "TT101")]
    assert [Path(p.split(":")[0]).name + ":" + p.split(":")[1] for p in sync["hot_path"]] == ["engine.py:10"]
    copy = by_place[("engine.py", 6, "TT301")]
    assert Path(copy["device_from"]).name == "train.py"
    assert ("metrics.py", 8, "TT101") not in by_place  # never called per step


def test_single_file_uses_its_project_root(tt, tmp_path: Path) -> None:
    _project(tmp_path / "proj")
    write(tmp_path / "proj" / "pyproject.toml", "[project]\nname = 'p'\n")
    result = tt("check", "metrics.py", "--select", "TT101", cwd=tmp_path / "proj")
    assert "metrics.py:4:" in result.stdout
    assert "Runs every step: called from engine.py:10." in result.stdout
    assert "metrics.py:8:" not in result.stdout


def test_a_project_file_that_never_names_torch_but_drives_training_is_checked(tt, tmp_path: Path) -> None:
    """An engine handed the model and loader (``state['model'].loss(sample)``; ``loss.backward()``) and
    never importing torch is part of the project; a helper that neither names torch nor trains stays out."""
    root = tmp_path / "proj"
    write(root / "train.py", "import torch\nfrom engine import Engine\nmodel = Net().cuda()\nEngine().train(model=model, loader=loader)\n")
    write(root / "engine.py", """
class Engine:
    def train(self, model, loader):
        for epoch in range(10):
            for sample in loader:
                loss = model.loss(sample)
                loss.backward()
                self.optimizer.step()
""")
    write(root / "strings.py", "def title(s):\n    return s.title()\n")
    findings = json.loads(tt("check", "proj", "--format", "json").stdout)
    assert ("engine.py", 4, "TT504") in {(Path(f["path"]).name, f["line"], f["code"]) for f in findings}
    assert not [f for f in findings if Path(f["path"]).name == "strings.py"]
