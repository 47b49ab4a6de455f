"""The pre-commit hook manifest parses and names a command that really runs."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML: pre-commit's own dependency
MANIFEST = Path(__file__).parent.parent.parent / ".pre-commit-hooks.yaml"


def test_manifest_shape() -> None:
    [hook] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert hook["id"] == "torchtriage"
    assert hook["entry"] == "torchtriage check"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "jupyter"]
    assert hook["require_serial"] is False


def test_entry_is_a_working_command(tmp_path: Path) -> None:
    [hook] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    program, *args = shlex.split(hook["entry"])
    executable = shutil.which(program)
    assert executable, f"{program} is not on PATH (is the package installed?)"
    (tmp_path / "ok.py").write_text("import torch\n")
    # pre-commit appends the staged file names to the entry.
    proc = subprocess.run([executable, *args, "ok.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "All checks passed!" in proc.stdout
