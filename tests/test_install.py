"""`make install` works where the system Python is externally managed (PEP 668: Debian 12, Ubuntu 24.04).

pip refuses to install when it is not in a venv and `sysconfig.get_path("stdlib")/EXTERNALLY-MANAGED`
exists (pip/_internal/utils/misc.py: check_externally_managed). The tests build such an interpreter: a
copy of this Python's binary in a throwaway prefix whose stdlib dir links to the real stdlib's entries
and holds the marker, with pip linked into its site-packages. Plain `python -m pip install` there
refuses; the Makefile, finding it as `python3` on PATH, must make a venv and install into that.
Nothing is downloaded: pip runs with --no-index on a local folder, where `torch==2.13.0` is a stub wheel
and the project is a tiny wheel (PROJECT_REQ), so the Makefile's own pin and order are what run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(MAKE is None, reason="no make")]

MARKER = "[externally-managed]\nError=This Python is managed by the system (a test stand-in for Debian 12).\n"
VENV_PKG = "python%d.%d-venv" % sys.version_info[:2]


def _wheel(folder: Path, name: str, version: str, source: str) -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in {**files, f"{dist_info}/RECORD": record}.items():
            archive.writestr(member, text)
    return path


def _managed_python(prefix: Path, *, ensurepip: bool = True) -> Path:
    """A relocated copy of this interpreter whose stdlib dir carries EXTERNALLY-MANAGED (and, without
    `ensurepip`, lacks venv's pip bootstrap, as Debian does until python3.X-venv is installed)."""
    real_stdlib = Path(sysconfig.get_path("stdlib"))  # in a venv: the base interpreter's
    stdlib = prefix / "lib" / real_stdlib.name
    site = stdlib / "site-packages"
    site.mkdir(parents=True)
    skip = {"site-packages", "dist-packages", "EXTERNALLY-MANAGED"} | (set() if ensurepip else {"ensurepip"})
    for entry in real_stdlib.iterdir():
        if entry.name not in skip:
            (stdlib / entry.name).symlink_to(entry)
    (stdlib / "EXTERNALLY-MANAGED").write_text(MARKER)
    pip_spec = importlib.util.find_spec("pip")
    assert pip_spec and pip_spec.origin
    (site / "pip").symlink_to(Path(pip_spec.origin).parent)
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent")
    for lib in libdir.glob("libpython*"):  # for builds that find libpython next to themselves ($ORIGIN)
        (prefix / "lib" / lib.name).symlink_to(lib)
    (prefix / "bin").mkdir()
    python = prefix / "bin" / "python3"
    shutil.copy2(Path(getattr(sys, "_base_executable", sys.executable)).resolve(), python)
    (prefix / "bin" / "python").symlink_to("python3")
    probe = subprocess.run(
        [python, "-c", "import sys, sysconfig; print(sys.prefix, sysconfig.get_path('stdlib'))"],
        capture_output=True, text=True, env=_env(prefix.parent),
    )
    if probe.returncode != 0 or probe.stdout.split() != [str(prefix), str(stdlib)]:
        pytest.skip(f"this Python does not run from a relocated prefix: {probe.stdout} {probe.stderr}")
    return python


def _env(tmp: Path) -> dict[str, str]:
    """The managed interpreter is `python3` on PATH, as on Debian; nothing of this run's make or venv leaks in."""
    ours = {"VENV", "BOOTSTRAP_PYTHON", "TORCH_REQ", "PROJECT_REQ", "APT_GET", "SUDO", "VIRTUAL_ENV"}
    prefixes = ("PIP_", "PYTHON", "MAKE", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if k not in ours and not k.startswith(prefixes)}
    env["PATH"] = f"{tmp / 'system' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    wheels = tmp / "wheels"
    # No index, no user/site pip config: only the folder of stub wheels.
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels), PIP_CONFIG_FILE=os.devnull)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A checkout with the real Makefile and pyproject.toml, and the stub wheels pip may use."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "torch", "2.13.0", "__version__ = '2.13.0'\n")
    _wheel(wheels, "tinyproj", "0.1", "")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, checkout / name)
    return checkout


def _make(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    project_req = f"PROJECT_REQ={checkout.parent / 'wheels' / 'tinyproj-0.1-py3-none-any.whl'}"
    return subprocess.run(
        [MAKE, "--no-print-directory", "-C", str(checkout), "install", project_req, "SUDO=", *args],
        capture_output=True, text=True, env=_env(checkout.parent), timeout=120,
    )


def test_install_makes_a_venv_where_system_pip_refuses(project: Path) -> None:
    tmp = project.parent
    python = _managed_python(tmp / "system")
    wheel = tmp / "wheels" / "tinyproj-0.1-py3-none-any.whl"

    # (a) the system interpreter refuses a plain pip install, as on Debian 12 / Ubuntu 24.04 ...
    refused = subprocess.run([python, "-m", "pip", "install", wheel], capture_output=True, text=True, env=_env(tmp))
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr
    # ... and so does the Makefile when told to use it as it is (PYTHON=: no venv).
    direct = _make(project, f"PYTHON={python}")
    assert direct.returncode != 0 and "externally-managed-environment" in direct.stderr, direct.stderr
    assert not (project / ".venv").exists()

    # (b) by default (python3 on PATH is the managed one) the Makefile makes .venv/ and installs there, torch first.
    made = _make(project)
    assert made.returncode == 0, made.stdout + made.stderr
    pip_lines = [line for line in made.stdout.splitlines() if " -m pip install" in line]
    assert [line.split()[0] for line in pip_lines] == [".venv/bin/python"] * 2
    assert "torch==2.13.0" in pip_lines[0] and "tinyproj" in pip_lines[1]
    venv_python = project / ".venv" / "bin" / "python"
    imported = subprocess.run(
        [venv_python, "-c", "import sys, torch, tinyproj; print(sys.base_prefix, torch.__version__)"],
        capture_output=True, text=True, env=_env(tmp),
    )
    assert imported.stdout.split() == [str(tmp / "system"), "2.13.0"], imported.stderr
    assert [p.name for p in (tmp / "system" / "lib").glob("python*/site-packages/*")] == ["pip"]

    # (c) again with nothing changed: no venv, no pip; a changed pyproject.toml runs pip again.
    again = _make(project)
    assert again.returncode == 0 and "pip" not in again.stdout + again.stderr, again.stdout + again.stderr
    stamp = project / ".venv" / ".installed"
    os.utime(stamp, (stamp.stat().st_mtime - 100,) * 2)
    (project / "pyproject.toml").touch()
    dry = _make(project, "-n")
    assert dry.stdout.count("-m pip install") == 2 and " -m venv" not in dry.stdout, dry.stdout


def test_missing_python3_venv_is_installed_or_explained(project: Path) -> None:
    tmp = project.parent
    python = _managed_python(tmp / "system", ensurepip=False)
    stdlib = python.parent.parent / "lib" / Path(sysconfig.get_path("stdlib")).name

    # No apt-get to fix it with: one clear message, no half-made venv left behind.
    failed = _make(project, f"APT_GET={tmp / 'no-apt-get'}")
    assert failed.returncode != 0
    assert f"sudo apt-get install {VENV_PKG}" in failed.stderr and "PYTHON=/path/to/python" in failed.stderr
    assert not (project / ".venv").exists()

    # With apt-get: it installs python3.X-venv (the stub brings back ensurepip) and goes on.
    log = tmp / "apt.log"
    apt_get = tmp / "apt-get"
    ensurepip = Path(sysconfig.get_path("stdlib")) / "ensurepip"
    apt_get.write_text(
        f'#!/bin/sh\necho "$*" >> {log}\n'
        f'[ "$1" = install ] && ln -s {ensurepip} {stdlib / "ensurepip"}\nexit 0\n'
    )
    apt_get.chmod(0o755)
    fixed = _make(project, f"APT_GET={apt_get}")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert log.read_text().splitlines() == ["update -qq", f"install -y -qq --no-install-recommends {VENV_PKG}"]
    assert (project / ".venv" / ".installed").exists()
