"""A real JupyterLab server for end-to-end tests: isolated Jupyter dirs, this checkout's extensions."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILT = REPO / "server" / "torchtriage" / "jupyter" / "labextension"


def entry_point_site(folder: Path) -> Path:
    """This checkout's entry points as installed metadata (the venv may hold another torchtriage's)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    info = folder / f"torchtriage-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torchtriage\nVersion: {project['version']}\n")
    lines = []
    for group, entries in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lab:
    """JupyterLab with isolated user folders (config, data, settings, workspaces).  By default it gets this
    checkout's extensions itself (the built labextension linked in, the server extension enabled, the
    sources first on PYTHONPATH); ``installed=True`` adds nothing: torchtriage is what the environment has
    installed (``make demo`` / ``make labextension``; a wheel), as a user starting ``jupyter lab`` gets it.
    ``python``: the environment's interpreter that runs JupyterLab (default: this one)."""

    def __init__(self, base: Path, root: Path, settings: dict[str, dict] | None = None, installed: bool = False,
                 python: str = sys.executable) -> None:
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        share = base / "share" / "jupyter" / "labextensions"
        share.mkdir(parents=True)
        config = base / "config"
        config.mkdir()
        if not installed:
            (share / "torchtriage-jupyterlab").symlink_to(BUILT)
            (config / "jupyter_server_config.json").write_text(
                json.dumps({"ServerApp": {"jpserver_extensions": {"torchtriage.jupyter": True}}}))
        settings_dir = base / "settings"
        quiet = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
        for plugin, values in {**quiet, **(settings or {})}.items():
            package, name = plugin.rsplit(":", 1)
            target = settings_dir / package / f"{name}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        self.env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(config), JUPYTER_DATA_DIR=str(base / "data"), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
            JUPYTER_PATH=str(base / "share" / "jupyter"), JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
            JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), OMP_NUM_THREADS="1",
        )
        if not installed:
            site = entry_point_site(base / "site")
            self.env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "server"), os.environ.get("PYTHONPATH", "")])
        self.log = (base / "lab.log").open("w")
        self.process = subprocess.Popen(
            [python, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.port={self.port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}",
             "--ServerApp.port_retries=0"],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=root,
        )
        self.log_path = base / "lab.log"
        self._wait()

    def _wait(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{self.url}api/status?token={self.token}", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise AssertionError("JupyterLab did not start:\n" + self.log_path.read_text()[-3000:])

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
