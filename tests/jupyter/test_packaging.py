"""`python -m build` builds the labextension and ships it in the wheel with the server config; after
`pip install` of that wheel into a fresh venv, Jupyter lists both extensions enabled.

The build runs as a user's would: isolated (hatchling and hatch-jupyter-builder from PyPI), from a copy of
the sources without a built labextension, so pyproject.toml's jupyter-builder hook runs npm to build it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NAME = "torchtriage-jupyterlab"
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "server", "extension/jupyterlab")
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.egg-info", "labextension", "node_modules", "lib", "*.tsbuildinfo")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("npm") is None, reason="building the labextension needs Node (npm)")]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("src")  # a copy without the built labextension, build/ or egg-info
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=LEFT_OUT)
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / name, source / name)
    assert not (source / "server" / "torchtriage" / "jupyter" / "labextension").exists()
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "Ensured target(s) exist" in build.stdout + build.stderr  # the hook built the labextension and checked it
    (path,) = out.glob("torchtriage-*.whl")
    return path


def test_wheel_contains_the_labextension_the_server_config_and_the_lsp_entry_point(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    data = next(n.split("/data/")[0] + "/data/" for n in names if ".data/data/" in n)
    assert f"{data}share/jupyter/labextensions/{NAME}/package.json" in names
    assert any(n.startswith(f"{data}share/jupyter/labextensions/{NAME}/static/remoteEntry.") for n in names)
    assert f"{data}etc/jupyter/jupyter_server_config.d/torchtriage.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # the JSON contracts' documents ship with the package (report.html links to REPORT_SCHEMA.md)
    assert {"torchtriage/runtime/report/REPORT_SCHEMA.md", "torchtriage/runtime/compare/COMPARE_SCHEMA.md"} <= set(names)
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "[jupyter_lsp_spec_v1]" in entry_points and "torchtriage.jupyter.lsp_spec:spec" in entry_points


def test_after_pip_install_jupyter_lists_both_extensions_enabled(wheel, tmp_path):
    # A fresh venv that sees this environment's packages (Jupyter itself) after its own, as a user's would.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "outer.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # --ignore-installed: with --prefix alone pip would first uninstall the torchtriage this suite runs from.
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed", "--prefix", str(venv), str(wheel)],
                   check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER") and k != "PYTHONPATH"}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), NO_COLOR="1")
    # The apps run in the venv's interpreter (`jupyter labextension` would run the outer environment's script).
    labext = subprocess.run([str(python), "-c", "from jupyterlab.labextensions import main; main()", "list"], env=env, capture_output=True, text=True, timeout=120)
    text = _plain(labext.stdout + labext.stderr)
    assert f"{venv}/share/jupyter/labextensions" in text, text
    line = next((l for l in text.splitlines() if NAME in l), "")
    assert "enabled" in line and "OK" in line, text
    server = subprocess.run([str(python), "-m", "jupyter_server.extension.serverextension", "list"], env=env, capture_output=True, text=True, timeout=120)
    text = _plain(server.stdout + server.stderr)
    ours = text.split(f"Config dir: {venv}/etc/jupyter", 1)[-1]
    assert "torchtriage.jupyter enabled" in ours and "torchtriage.jupyter  OK" in ours.replace("0.1.0 OK", " OK"), text


def _plain(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)
