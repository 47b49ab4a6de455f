"""Headless Neovim as a second real client, and the docs' Neovim snippet.

Skips without `nvim`; CI installs it via apt.
"""

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


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "lsp-clients.md"


def _run_readme_snippet(tmp_path: Path, path: str) -> tuple[dict, subprocess.CompletedProcess[str]]:
    """The docs' Neovim config (docs/guides/lsp-clients.md), opening a Python file with `path` as PATH;
    what it notified and started."""
    section = GUIDE.read_text(encoding="utf-8").split("## Neovim", 1)[1]
    snippet = tmp_path / "snippet.lua"
    snippet.write_text(section.split("```lua\n", 1)[1].split("```", 1)[0])
    (tmp_path / "train.py").write_text("import torch\n")
    out = tmp_path / "result.json"
    env = {**os.environ, "PATH": path, "TT_SNIPPET": str(snippet), "TT_OUT": str(out)}
    env["XDG_STATE_HOME"] = env["XDG_DATA_HOME"] = env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    lua = Path(__file__).parent / "nvim" / "readme_snippet.lua"
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(lua), "train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )
    assert out.exists(), f"nvim wrote no result: {completed.stdout} {completed.stderr}"
    return json.loads(out.read_text()), completed


def test_readme_snippet_without_torchtriage_says_what_to_install(tmp_path: Path):
    path = os.pathsep.join(["/usr/bin", "/bin"])
    if shutil.which("torchtriage", path=path):
        pytest.skip("torchtriage is installed system-wide")
    result, completed = _run_readme_snippet(tmp_path, path)
    assert result["filetype"] == "python" and result["clients"] == []
    assert result["errmsg"] == "" and "traceback" not in (completed.stdout + completed.stderr).lower()
    [note] = result["notes"]
    assert note["level"] == 3  # vim.log.levels.WARN
    assert "`torchtriage` is not an executable" in note["msg"]
    assert 'pipx install ".[lsp]"' in note["msg"] and ".venv/bin/torchtriage" in note["msg"]


def test_readme_snippet_starts_the_server_when_torchtriage_is_on_path(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "torchtriage"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchtriage "$@"\n')
    wrapper.chmod(0o755)
    result, _ = _run_readme_snippet(tmp_path, os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]))
    assert result["notes"] == [] and result["errmsg"] == ""
    assert result["clients"] == ["torchtriage"]
