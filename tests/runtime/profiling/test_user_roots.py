"""Your code is the whole project, not the script's folder (issue 22): the script's project, PYTHONPATH,
editable installs and --user-root folders are user code; installed packages never are, under any root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from run_support import FAST

from torchtriage.runtime.agent.usercode import UserCode, import_roots
from torchtriage.runtime.profiling.user_roots import host_user_roots

MODEL = '''\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Parameter(torch.randn(256, 1024) * 0.02)
        self.head = torch.nn.Parameter(torch.randn(1024, 1) * 0.02)

    def forward(self, x):
        h = torch.tanh(x @ self.inner @ self.inner.t() @ self.inner)  # the hot line
        return (h @ self.head).square().mean()
'''

TRAIN = '''\
import torch

from mypkg.model import Net

torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 256)
for step in range(40):
    opt.zero_grad()
    loss = model(x)
    loss.backward()
    opt.step()
'''


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _profile(script: Path, cwd: Path, out: Path, pythonpath: list[Path] = (), options: tuple[str, ...] = ()) -> dict:
    """``torchtriage profile`` through the CLI in a subprocess; its report.json."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), *FAST, *options, str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "report.json").read_text())


def _project(base: Path) -> Path:
    """``base/proj``: pyproject.toml, the package mypkg/ and scripts/train.py that imports it."""
    root = base / "proj"
    _write(root / "pyproject.toml", '[project]\nname = "proj"\nversion = "0"\n')
    _write(root / "mypkg" / "__init__.py", "")
    _write(root / "mypkg" / "model.py", MODEL)
    _write(root / "scripts" / "train.py", TRAIN)
    return root


@pytest.mark.slow
def test_a_script_in_scripts_charges_the_projects_package(tmp_path: Path) -> None:
    """minGPT's layout: the script in a subfolder, run from there with the project on PYTHONPATH.  Before,
    only scripts/ and the cwd were user code, so the model's time stopped at ``loss = model(x)`` in train.py."""
    root = _project(tmp_path)
    report = _profile(root / "scripts" / "train.py", root / "scripts", tmp_path / "run", pythonpath=[root])
    top = max(report["hotspots"], key=lambda h: h["self_ms_per_step"])
    model = (root / "mypkg" / "model.py").resolve()
    assert (Path(top["path"]).resolve(), top["line"]) == (model, _line_of(model, "the hot line")), report["hotspots"][:3]
    assert str(root.resolve()) in report["user_roots"]
    assert str((root / "scripts").resolve()) in report["user_roots"]
    assert not any("site-packages" in r for r in report["user_roots"])


@pytest.mark.slow
def test_pythonpath_packages_and_user_roots_are_user_code(tmp_path: Path) -> None:
    """A package in a sibling folder only on PYTHONPATH (no project marker), and one the script puts on
    sys.path itself, found only because --user-root names its folder: both packages' lines are hot lines."""
    sibling = tmp_path / "sibling"
    _write(sibling / "sibpkg" / "__init__.py", "")
    sib_model = _write(sibling / "sibpkg" / "model.py", MODEL)
    extra = tmp_path / "vendored"
    _write(extra / "extrapkg" / "__init__.py", "")
    extra_ops = _write(extra / "extrapkg" / "ops.py", (
        "import torch\n\n\n"
        "def widen(x, w):\n"
        "    return torch.tanh(x @ w @ w.t() @ w)  # the extra hot line\n"
    ))
    app = tmp_path / "app"
    script = _write(app / "train.py", (
        "import sys\n\n"
        f"sys.path.insert(0, {str(extra)!r})  # after the agent started: not a PYTHONPATH entry\n\n"
        "import torch\n\n"
        "from extrapkg.ops import widen\n"
        "from sibpkg.model import Net\n\n"
        "torch.manual_seed(0)\n"
        "model = Net()\n"
        "w = torch.nn.Parameter(torch.randn(256, 1024) * 0.02)\n"
        "opt = torch.optim.SGD([*model.parameters(), w], lr=1e-3)\n"
        "x = torch.randn(256, 256)\n"
        "for step in range(40):\n"
        "    opt.zero_grad()\n"
        "    loss = model(x) + widen(x, w).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    ))
    report = _profile(script, app, tmp_path / "run", pythonpath=[sibling], options=("--user-root", str(extra)))
    hot = {(Path(h["path"]).resolve(), h["line"]) for h in report["hotspots"]}
    assert (sib_model.resolve(), _line_of(sib_model, "the hot line")) in hot, report["hotspots"][:5]
    assert (extra_ops.resolve(), _line_of(extra_ops, "the extra hot line")) in hot, report["hotspots"][:5]
    assert {str(sibling.resolve()), str(extra.resolve())} <= set(report["user_roots"])
    charged_to_call = [h for h in report["hotspots"] if Path(h["path"]).resolve() == script.resolve()
                       and h["line"] == _line_of(script, "loss = model(x)")]
    assert not charged_to_call or charged_to_call[0]["share"] < 0.1  # the call no longer carries the model's time


def test_site_packages_under_a_root_stays_library_code(tmp_path: Path) -> None:
    """A project holding its virtual environment, and roots as broad as / or the home folder: the packages
    installed there, the standard library and torch are never the user's."""
    project = tmp_path / "proj"
    model = _write(project / "mypkg" / "model.py", "x = 1\n")
    venv_file = _write(project / ".venv" / "lib" / "python3.11" / "site-packages" / "lib" / "core.py", "x = 1\n")
    dist_file = _write(project / "env" / "lib" / "python3" / "dist-packages" / "lib" / "core.py", "x = 1\n")
    stdlib_file = os.path.join(sysconfig.get_paths()["stdlib"], "os.py")
    import torch

    torch_file = torch.nn.modules.module.__file__
    for roots in ([str(project)], [os.sep], [os.path.expanduser("~")], [str(tmp_path)]):
        user = UserCode(roots, [os.path.dirname(torch.__file__)])
        assert not user.is_user(str(venv_file)) and not user.is_user(str(dist_file)), roots
        assert not user.is_user(stdlib_file) and not user.is_user(torch_file), roots
    assert UserCode([str(project)]).is_user(str(model))
    assert UserCode([os.sep]).is_user(str(model))


def test_import_roots_keep_pythonpath_folders_and_editable_installs_not_libraries(tmp_path: Path) -> None:
    """What the agent adds from the interpreter it runs in: sys.path entries outside the libraries, and the
    project folders of editable installs (this checkout is one in the test environment, when installed so)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    site_packages = tmp_path / "venv" / "lib" / "site-packages"
    site_packages.mkdir(parents=True)
    stdlib = sysconfig.get_paths()["stdlib"]
    target = tmp_path / "wheels"  # pip install --target wheels ...; PYTHONPATH=wheels
    (target / "IPython").mkdir(parents=True)
    (target / "ipython-9.0.0.dist-info").mkdir()
    found = import_roots(path=[str(mine), str(site_packages), stdlib, str(tmp_path / "missing"), stdlib + ".zip", str(target)])
    assert str(mine.resolve()) + os.sep in found and not any(f.startswith(str(target.resolve())) for f in found)
    assert not any(f.startswith(str(site_packages)) or f.startswith(os.path.realpath(stdlib)) for f in found)
    import importlib.metadata

    direct = importlib.metadata.distribution("torchtriage").read_text("direct_url.json")
    if direct and json.loads(direct).get("dir_info", {}).get("editable"):
        checkout = Path(__file__).resolve().parents[3]
        assert str(checkout) + os.sep in found


def test_host_roots_are_the_scripts_project_folder_cwd_and_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    script = root / "scripts" / "train.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    roots = host_user_roots(script, elsewhere, [tmp_path / "extra"])
    assert roots == [str(root.resolve()), str((root / "scripts").resolve()), str(elsewhere.resolve()), str((tmp_path / "extra").resolve())]
    assert host_user_roots(None, root / "mypkg") == [str(root.resolve()), str((root / "mypkg").resolve())]  # the magic's cwd
    # a dotfiles repository in the home folder is not the script's project
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    loose = _write(home / "experiments" / "train.py", TRAIN)
    monkeypatch.setenv("HOME", str(home))
    assert host_user_roots(loose, loose.parent) == [str(loose.parent.resolve())]
