"""End to end in a real JupyterLab + jupyterlab-lsp, driven in headless Chromium (playwright-core).

The first test runs JupyterLab as this environment has torchtriage installed (``make demo`` / ``make
labextension`` leave it so: `jupyter server extension list` and `jupyter labextension list` show it
enabled), with nothing added by the test; the others link this checkout's build in themselves.

Open examples/notebook_training.ipynb: torchtriage's diagnostics appear in the loop cell; run the
set-up cell, click "Profile this cell" on the loop cell: the rendered report and the line
annotations appear, and the runs panel lists the run.  Screenshots land in the test's folder
(failure.png on failure); set TT_SCREENSHOTS=DIR to keep notebook.png.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from urllib.request import urlopen

from build_support import needs_labextension
from lab_support import BUILT, REPO, Lab

JLAB = REPO / "extension" / "jupyterlab"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists() or NODE is None, reason="needs node and Debian's chromium (make system-deps)"),
]


@pytest.fixture(autouse=True)
def built():
    needs_labextension((JLAB / "node_modules" / "playwright-core").is_dir() and (BUILT / "package.json").is_file(),
                       "needs `make labextension` (npm deps and the built labextension)")

# jupyterlab-lsp serves one language server per document, the highest rank; pylsp is installed too, and at
# equal ranks it may win ("Two matching servers: pylsp and torchtriage have the same rank").
LSP_SETTINGS = {"@jupyter-lsp/jupyterlab-lsp:plugin": {"language_servers": {"torchtriage": {"priority": 100, "serverSettings": {}}}}}


# The environment JupyterLab runs from in the first test: this one, or the one `make demo` made (CI sets it
# to .venv-demo/bin/python, the venv of Debian's python3 that .ci/run's `make demo` left ready).
LAB_PYTHON = os.environ.get("TORCHTRIAGE_LAB_PYTHON") or sys.executable


def _environment_lists(tmp_path: Path) -> str:
    """`jupyter server extension list` and `jupyter labextension list` of this environment (user folders empty)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER") and k != "PYTHONPATH"}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"), JUPYTER_DATA_DIR=str(tmp_path / "user-data"), NO_COLOR="1")
    out = ""
    for app in ("jupyter_server.extension.serverextension", "jupyterlab.labextensions"):
        code = f"import sys; sys.argv = ['jupyter', 'list']; from {app} import main; main()"
        proc = subprocess.run([LAB_PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        out += re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    return out


def test_diagnostics_profile_report_and_annotations_in_jupyterlab(tmp_path):
    listed = _environment_lists(tmp_path)
    ours = [line for line in listed.splitlines() if "torchtriage" in line]
    installed = any("torchtriage.jupyter" in line and "enabled" in line for line in ours) and \
        any("torchtriage-jupyterlab" in line and "enabled" in line and "OK" in line for line in ours)
    needs_labextension(installed, f"this environment has not torchtriage's extensions enabled (make labextension):\n{listed}")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO / "examples" / "notebook_training.ipynb", root / "notebook_training.ipynb")
    out = tmp_path / "screens"
    out.mkdir()
    lab = Lab(tmp_path / "lab", root, LSP_SETTINGS, installed=True, python=LAB_PYTHON)
    try:
        env = dict(os.environ, LAB_URL=lab.url, LAB_TOKEN=lab.token, NOTEBOOK="notebook_training.ipynb", OUT=str(out),
                   CHROMIUM=CHROMIUM)
        result = subprocess.run([NODE, str(JLAB / "e2e" / "run.mjs")], env=env, capture_output=True, text=True, timeout=480)
    finally:
        lab.close()
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    seen = json.loads(lines[-1]) if lines else {}
    where = f"screenshots in {out}; lab log {lab.log_path}; stderr: {result.stderr[-1500:]}"
    assert result.returncode == 0, f"{seen} ({where})"
    assert seen["lint_ranges_cell2"] >= 2 and seen["tooltip"].rstrip().endswith("torchtriage"), seen
    assert "history.append(loss)" in seen["tooltip"] or "print" in seen["tooltip"], seen
    assert seen["verdict"] and seen["labels"] and all("%" in label and "ms" in label for label in seen["labels"]), seen
    assert any("print" in line or "loss" in line for line in seen["hot_lines"]), seen
    assert seen["runs"] and seen["report_html"], seen
    print(json.dumps(seen, indent=1))
    if os.environ.get("TT_SCREENSHOTS"):
        shutil.copy(out / "notebook.png", Path(os.environ["TT_SCREENSHOTS"]) / "jupyterlab-profile.png")


# pylsp ranked first: jupyterlab-lsp serves the notebook with pylsp (completion, hover...), and the
# labextension's own client shows torchtriage's diagnostics beside it and applies its quick fixes.
PYLSP_FIRST = {"@jupyter-lsp/jupyterlab-lsp:plugin": {"language_servers": {"pylsp": {"priority": 100, "serverSettings": {}}}}}


def test_diagnostics_beside_pylsp(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO / "examples" / "notebook_training.ipynb", root / "notebook_training.ipynb")
    out = tmp_path / "screens"
    out.mkdir()
    lab = Lab(tmp_path / "lab", root, PYLSP_FIRST)
    try:
        env = dict(os.environ, LAB_URL=lab.url, LAB_TOKEN=lab.token, NOTEBOOK="notebook_training.ipynb", OUT=str(out),
                   CHROMIUM=CHROMIUM, DIAGNOSTIC=".tt-diagnostic", ONLY_DIAGNOSTICS="1")
        result = subprocess.run([NODE, str(JLAB / "e2e" / "run.mjs")], env=env, capture_output=True, text=True, timeout=300)
        status = json.loads(urlopen(f"{lab.url}lsp/status?token={lab.token}", timeout=10).read())
    finally:
        lab.close()
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    seen = json.loads(lines[-1]) if lines else {}
    assert result.returncode == 0, f"{seen} (screenshots in {out}; lab log {lab.log_path}; stderr: {result.stderr[-1500:]})"
    titles = " ".join(seen["titles"])
    assert "TT102" in titles and "TT201" in titles, seen
    assert seen["fixed_line"].strip() == "history.append(loss.detach())", seen
    # jupyterlab-lsp talked to pylsp, our client to torchtriage (the browser has gone: no handler is left).
    assert status["sessions"]["pylsp"]["last_handler_message_at"], status["sessions"]["pylsp"]
    assert status["sessions"]["torchtriage"]["last_server_message_at"], status["sessions"]["torchtriage"]
