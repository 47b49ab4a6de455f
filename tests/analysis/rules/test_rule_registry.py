"""The rule registry survives a broken rule module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchtriage.analysis.rules import import_rule_modules


def test_a_rule_module_that_fails_to_import_is_skipped_with_a_warning(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "fake_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text("LOADED = True\n")
    (package / "broken.py").write_text("from nowhere import missing\n")
    (package / "_private.py").write_text("raise SystemError('private modules are not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="broken failed to import"):
        problems = import_rule_modules("fake_rules", [str(package)])
    assert len(problems) == 1 and "ModuleNotFoundError" in problems[0]
    assert sys.modules["fake_rules.good"].LOADED
    assert "fake_rules._private" not in sys.modules
