"""Which files are checked, and what happens with files that cannot be."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import TRAIN_CUDA, write


def _paths(result) -> set[str]:
    return {f["path"] for f in json.loads(result.stdout)}


def test_folder_walk_skips_junk_and_non_torch_files(tt, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "train.py", TRAIN_CUDA)
    write(project / "pkg" / "loop.py", TRAIN_CUDA)
    for junk in (".git", "node_modules", "build", "dist", "__pycache__", ".ipynb_checkpoints", "x.egg-info"):
        write(project / junk / "train.py", TRAIN_CUDA)
    venv = project / "myenv"  # any folder holding pyvenv.cfg is a virtualenv
    write(venv / "pyvenv.cfg", "home = /usr/bin\n")
    write(venv / "lib" / "train.py", TRAIN_CUDA)
    write(project / "conda" / "conda-meta" / "history", "")
    write(project / "conda" / "train.py", TRAIN_CUDA)
    # Never mentions torch: skipped unread-as-Python, even though it is not valid code.
    write(project / "notes.py", "this is not python (\n")
    (project / "data.py").write_bytes(b"\x00\x01binary without the magic word")
    result = tt("check", "--format", "json", "--select", "TT301", "project")
    assert _paths(result) == {"project/train.py", "project/pkg/loop.py"}
    assert result.stderr == ""


def test_named_file_is_checked_even_without_torch(tt, tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "def f(:\n")
    result = tt("check", "--format", "json", "broken.py")
    assert [f["code"] for f in json.loads(result.stdout)] == ["TT000"]


def test_exclude_from_config(tt, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchtriage]\nexclude = ["legacy"]\n')
    write(tmp_path / "train.py", TRAIN_CUDA)
    write(tmp_path / "legacy" / "old.py", TRAIN_CUDA)
    result = tt("check", "--format", "json", "--select", "TT301", ".")
    assert _paths(result) == {"train.py"}


def test_unreadable_files_reported_on_stderr_and_skipped(tt, tmp_path: Path) -> None:
    (tmp_path / "latin1.py").write_bytes(b"import torch\nname = '\xe9'\n")
    (tmp_path / "binary.py").write_bytes(b"import torch\x00\x00\x01")
    write(tmp_path / "nb.ipynb", '{"cells": [{"cell_type": "code", "source": "import torch"')  # truncated
    write(tmp_path / "ok.py", "import torch\n")
    result = tt("check", ".")
    assert result.returncode == 1, "a file that could not be checked is not a clean run"
    assert "Traceback" not in result.stderr
    assert "latin1.py: skipped: not valid UTF-8 (byte 0xe9 on line 2)" in result.stderr
    assert "binary.py: skipped: binary file" in result.stderr
    assert "nb.ipynb: not a valid notebook: invalid JSON at line 1 column" in result.stderr
    assert "3 files could not be checked" in result.stdout
    assert tt("check", "--exit-zero", ".").returncode == 0


def test_huge_file_over_the_limit_is_skipped(tt, tmp_path: Path) -> None:
    path = tmp_path / "generated.py"
    line = "x = torch.zeros(1)  # " + "a" * 100 + "\n"
    path.write_text(line * (11 * 1024 * 1024 // len(line)))
    result = tt("check", "generated.py")
    assert result.returncode == 1
    assert "generated.py: skipped: 10 MiB is over the 10 MiB limit" in result.stderr


def test_many_files_in_parallel_match_serial_results(tt, tmp_path: Path) -> None:
    for index in range(20):  # above the parallel threshold
        write(tmp_path / f"m{index:02}.py", TRAIN_CUDA)
    result = tt("check", "--format", "json", "--select", "TT301", ".")
    assert sorted(_paths(result)) == [f"m{index:02}.py" for index in range(20)]
