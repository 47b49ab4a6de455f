"""Notebooks through the CLI: check with cell positions, fix in place, diff."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import TRAIN_CUDA

CELLS = ["!pip install torch\n", TRAIN_CUDA.lstrip("\n")]


def _notebook(path: Path) -> str:
    data = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
            *(
                {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": s.splitlines(True)}
                for s in CELLS
            ),
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(data, indent=1) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def test_check_reports_cells(tt, tmp_path: Path) -> None:
    _notebook(tmp_path / "train.ipynb")
    result = tt("check", "--select", "TT301", "train.ipynb")
    assert result.returncode == 1
    assert result.stdout.startswith("train.ipynb:cell 3:4:9: TT301 [*] ")
    [finding] = json.loads(tt("check", "--format", "json", "--select", "TT301", "train.ipynb").stdout)
    assert finding["cell"] == {"cell": 2, "line": 4, "end_line": 4}


def test_fix_and_diff(tt, tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    before = _notebook(path)
    diff = tt("check", "--diff", "--select", "TT301", "train.ipynb")
    assert diff.returncode == 1 and path.read_text() == before
    assert '+    "    x = x.to(device, non_blocking=True)\\n",' in diff.stdout
    fixed = tt("check", "--fix", "--select", "TT301", "train.ipynb")
    assert fixed.returncode == 0
    assert path.read_text() == before.replace("x.to(device)", "x.to(device, non_blocking=True)")


def test_folder_walk_includes_notebooks(tt, tmp_path: Path) -> None:
    (tmp_path / "nb").mkdir()
    _notebook(tmp_path / "nb" / "train.ipynb")
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir()
    _notebook(tmp_path / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb")
    result = tt("check", "--format", "json", "--select", "TT301", ".")
    assert [f["path"] for f in json.loads(result.stdout)] == ["nb/train.ipynb"]
