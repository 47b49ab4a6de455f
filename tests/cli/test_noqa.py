"""``# noqa`` and ``# torchtriage: noqa`` through the CLI, including ``--fix``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import TRAIN_CUDA, write


def _codes(result) -> list[tuple[str, int]]:
    return [(f["code"], f["line"]) for f in json.loads(result.stdout)]


def test_noqa_with_code_bare_and_other_code(tt, tmp_path: Path) -> None:
    write(
        tmp_path / "train.py",
        """
        import torch
        device = torch.device("cuda")
        for x, y, z, w in loader:
            x = x.to(device)  # noqa: TT301
            y = y.to(device)  # noqa
            z = z.to(device)  # noqa: TT101
            w = w.to(device)  # NOQA:TT101,TT301
            loss = model(x, y, z, w).sum()
            loss.backward()
        """,
    )
    result = tt("check", "--format", "json", "--select", "TT301", "train.py")
    assert _codes(result) == [("TT301", 6)]


def test_fix_does_not_apply_suppressed_fixes(tt, tmp_path: Path) -> None:
    path = write(
        tmp_path / "train.py",
        """
        import torch
        device = torch.device("cuda")
        for x, y in loader:
            x = x.to(device)  # noqa: TT301
            y = y.to(device)
            loss = model(x, y).sum()
            loss.backward()
        """,
    )
    result = tt("check", "--fix", "--select", "TT301", "train.py")
    text = path.read_text()
    assert "x = x.to(device)  # noqa: TT301" in text
    assert "y = y.to(device, non_blocking=True)" in text
    assert result.returncode == 0


def test_file_level_noqa(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", "# torchtriage: noqa\n" + TRAIN_CUDA.lstrip("\n"))
    before = path.read_text()
    assert tt("check", "train.py").returncode == 0
    assert tt("check", "--fix", "train.py").returncode == 0
    assert path.read_text() == before
