"""``[tool.torchtriage]`` in pyproject.toml, end to end through the CLI in a temp project."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import TRAIN_CUDA, TRAIN_ITEM, write

BOTH = TRAIN_CUDA + "    total += loss.item()\n"  # TT301 on line 4, TT101 on line 7


def _found(result) -> list[tuple[str, str, str]]:
    return sorted((f["path"], f["code"], f["severity"]) for f in json.loads(result.stdout))


def test_select_ignore_severity_and_per_file_ignores(tt, tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
        [project]
        name = "demo"

        [tool.torchtriage]
        select = ["TT1", "TT3"]
        ignore = ["TT102", "TT103", "TT104", "TT302", "TT303", "TT304"]
        severity = { TT301 = "error", TT1 = "info" }

        [tool.torchtriage.per-file-ignores]
        "scripts/*" = ["TT301"]
        """,
    )
    write(tmp_path / "train.py", BOTH)
    write(tmp_path / "scripts" / "bench.py", BOTH)
    result = tt("check", "--format", "json", ".")
    assert result.returncode == 1
    assert result.stderr == ""
    assert _found(result) == [
        ("scripts/bench.py", "TT101", "info"),
        ("train.py", "TT101", "info"),
        ("train.py", "TT301", "error"),
    ]
    # CLI flags win over the file; --no-config ignores it.
    only = tt("check", "--format", "json", "--select", "TT301", ".")
    assert _found(only) == [("train.py", "TT301", "error")]
    raw = tt("check", "--format", "json", "--no-config", "--select", "TT301", ".")
    assert _found(raw) == [("scripts/bench.py", "TT301", "warning"), ("train.py", "TT301", "warning")]


def test_config_found_from_a_subfolder(tt, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchtriage]\nselect = ["TT101"]\n')
    write(tmp_path / "pkg" / "train.py", BOTH)
    result = tt("check", "--format", "json", "train.py", cwd=tmp_path / "pkg")
    assert _found(result) == [("train.py", "TT101", "warning")]


def test_device_setting(tt, tmp_path: Path) -> None:
    # No CUDA mention: the CUDA-only TT301 stays quiet unless device = "cuda".
    source = TRAIN_CUDA.replace('device = torch.device("cuda")', "device = pick_device()")
    write(tmp_path / "train.py", source)
    assert tt("check", "--select", "TT301", "train.py").returncode == 0
    write(tmp_path / "pyproject.toml", '[tool.torchtriage]\ndevice = "cuda"\n')
    assert _found(tt("check", "--format", "json", "--select", "TT301", "train.py")) == [
        ("train.py", "TT301", "warning")
    ]
    assert tt("check", "--select", "TT301", "--device", "cpu", "train.py").returncode == 0


def test_unknown_and_invalid_settings_warn_and_never_crash(tt, tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
        [tool.torchtriage]
        select = ["TT101"]
        colour = "always"
        device = "tpu"
        severity = { TT101 = "loud" }
        ignore = 7
        """,
    )
    write(tmp_path / "train.py", TRAIN_ITEM)
    result = tt("check", "--format", "json", "train.py")
    assert "Traceback" not in result.stderr
    assert "unknown setting 'colour'" in result.stderr
    assert "device: 'tpu' is not one of auto, cuda, cpu" in result.stderr
    assert "severity.TT101: 'loud'" in result.stderr
    assert "ignore: expected a list of rule codes" in result.stderr
    assert _found(result) == [("train.py", "TT101", "warning")]  # the valid key still applies


def test_broken_pyproject_is_ignored_not_fatal(tt, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.torchtriage\nselect = \n")
    write(tmp_path / "train.py", TRAIN_ITEM)
    result = tt("check", "--select", "TT101", "train.py")
    assert result.returncode == 1 and "Traceback" not in result.stderr


def test_broken_torchtriage_table_is_reported(tt, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.torchtriage]\nselect = [\n")
    write(tmp_path / "train.py", TRAIN_ITEM)
    result = tt("check", "--select", "TT101", "train.py")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "pyproject.toml" in result.stderr and "warning" in result.stderr
