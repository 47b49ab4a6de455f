"""Shared helpers for the runtime bridge tests (profiling/, attribution/, diagnosis/ ...): real CLI runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from torchtriage.runtime.results.profile_data import ProfileData

DATA = Path(__file__).resolve().parent.parent / "data" / "runtime"
FAST = ["--skip-first", "1", "--wait", "0", "--warmup", "1", "--active", "3"]


def profile_cli(tmp_path: Path, script: str, *script_args: str, options: tuple[str, ...] = (), timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ``torchtriage profile`` on a test script; returns the process and the run folder."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(out), *FAST, *options, str(DATA / script)]
    if script_args:
        command += ["--", *script_args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return proc, out


def profile_source(base: Path, name: str, source: str, timeout: float = 300, options: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Write ``source`` as ``base/<name>.py`` and run ``torchtriage profile`` on it (the FAST window, then
    ``options``), failing the test if the run fails; returns the script and its run folder."""
    script = base / f"{name}.py"
    script.write_text(source, encoding="utf-8")
    folder = base / f"run_{name}"
    command = [sys.executable, "-m", "torchtriage", "profile", "--quiet", "--out", str(folder), *FAST, *options, str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return script, folder


def load_profile(run_dir: Path) -> ProfileData:
    return ProfileData.load(run_dir / "profile.json")


def top_line(profile: ProfileData, category: str, script: str, key: str = "self_us") -> int:
    costs = [c for c in profile.lines if c.category == category and c.path == str(DATA / script)]
    return max(costs, key=lambda c: getattr(c, key)).line


def line_of(script: str, text: str) -> int:
    """1-based number of the first line of ``script`` containing ``text``."""
    for number, line in enumerate((DATA / script).read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {script}")


def agent_json(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "agent.json").read_text())
