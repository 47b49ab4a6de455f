"""Headless Neovim as a second real client (skips without `nvim`; CI installs it via apt)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_helpers import DATA

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not installed (apt-get install -y neovim gives 0.7.2)")


def test_neovim_gets_diagnostics_and_code_actions(tmp_path: Path):
    script = tmp_path / "train_example.py"
    shutil.copy(DATA / "train_example.py", script)
    out = tmp_path / "result.json"
    env = {**os.environ, "TT_FILE": str(script), "TT_PYTHON": sys.executable, "TT_OUT": str(out)}
    env["XDG_STATE_HOME"] = env["XDG_DATA_HOME"] = env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    lua = Path(__file__).parent / "nvim" / "client.lua"
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(lua)], env=env, capture_output=True, text=True, timeout=90
    )
    assert out.exists(), f"nvim wrote no result: {completed.stdout} {completed.stderr}"
    result = json.loads(out.read_text())
    assert result["errors"] == []
    found = sorted((d["code"], d["lnum"], d["col"]) for d in result["diagnostics"])
    assert found == [("TT101", 14, 12), ("TT301", 9, 11), ("TT301", 9, 25), ("TT303", 6, 9)]
    assert {d["source"] for d in result["diagnostics"]} == {"torchtriage"}
    titles = [a["title"] for a in result["actions"]]
    assert titles.count("Add non_blocking=True (TT301)") == 2
    assert "Suppress with `# noqa: TT301`" in titles
    fix = next(a for a in result["actions"] if a["title"] == "Add non_blocking=True (TT301)")
    assert fix["edits"][0]["newText"] in ("x.to(device, non_blocking=True)", "y.to(device, non_blocking=True)")
