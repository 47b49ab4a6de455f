"""Helpers for the CLI tests: sample sources, file writing, and the real CLI as a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

TRAIN_CUDA = """
import torch
device = torch.device("cuda")
for x, y in loader:
    x = x.to(device)
    loss = model(x).sum()
    loss.backward()
"""

TRAIN_ITEM = """
import torch

for step, (x, y) in enumerate(loader):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    total += loss.item()
"""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def runner(tmp_path: Path) -> Callable[..., Result]:
    """A function running ``python -m torchtriage ARGS`` in ``tmp_path`` (or ``cwd``)."""

    def run(*args: str, cwd: Path | None = None, stdin: str | None = None) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "torchtriage", *args],
            cwd=cwd or tmp_path,
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run
