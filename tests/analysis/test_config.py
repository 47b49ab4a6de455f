"""Settings validation: one schema, bad values reported and replaced, never raised."""

from __future__ import annotations

from pathlib import Path

from torchtriage.config import Settings, find_pyproject, load_settings, settings_from_mapping
from torchtriage.findings import Severity


def test_defaults_enable_everything() -> None:
    assert Settings().is_enabled("TT301") and Settings().is_enabled("TT999")


def test_select_ignore_extend_prefixes() -> None:
    settings, errors = settings_from_mapping({"select": ["TT1"], "extend_select": "TT301", "ignore": ["tt102"]})
    assert errors == []
    assert settings.is_enabled("TT101") and settings.is_enabled("TT301")
    assert not settings.is_enabled("TT102") and not settings.is_enabled("TT302")


def test_per_file_ignores_match_globs_and_names() -> None:
    settings, errors = settings_from_mapping({"per-file-ignores": {"tests/*": ["TT1"], "conftest.py": ["TT3"]}})
    assert errors == []
    assert not settings.is_enabled("TT101", "tests/test_x.py")
    assert not settings.is_enabled("TT101", "pkg/tests/test_x.py")
    assert settings.is_enabled("TT101", "src/train.py")
    assert not settings.is_enabled("TT301", "a/b/conftest.py")


def test_severity_longest_prefix_wins() -> None:
    settings, errors = settings_from_mapping({"severity": {"TT1": "info", "TT101": "ERROR"}})
    assert errors == []
    assert settings.severity_for("TT101", Severity.WARNING) is Severity.ERROR
    assert settings.severity_for("TT102", Severity.WARNING) is Severity.INFO
    assert settings.severity_for("TT301", Severity.WARNING) is Severity.WARNING


def test_bad_values_are_reported_and_defaults_kept() -> None:
    settings, errors = settings_from_mapping(
        {"select": 3, "device": "tpu", "severity": {"TT1": "loud"}, "per-file-ignores": [], "nope": 1}
    )
    assert settings.select == Settings().select and settings.device == "auto"
    assert len(errors) == 5
    assert any("unknown setting 'nope'" in e for e in errors)


def test_load_settings_from_nearest_pyproject_with_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchtriage]\ndevice = "cpu"\n')
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no table: keep looking up
    settings, errors = load_settings(inner)
    assert errors == [] and settings.device == "cpu"
    assert settings.source == str(tmp_path / "pyproject.toml")
    assert find_pyproject(inner / "missing.py") == tmp_path / "pyproject.toml"


def test_no_pyproject_gives_defaults(tmp_path: Path) -> None:
    settings, errors = load_settings(tmp_path)
    assert errors == [] and settings.device == Settings().device
