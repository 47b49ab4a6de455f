"""The README stays short and true: the two set-up commands exist, and every file it links to is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 300  # the rest lives in docs/


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_LINES, f"README.md has {len(README.splitlines())} lines; move detail to docs/"


def test_the_two_setup_commands_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "make demo" in README and "make test" in README
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci/run").read_text(encoding="utf-8")


def test_every_relative_link_and_image_resolves() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    relative = [t for t in targets if not re.match(r"^[a-z]+:", t)]
    assert relative, "the README links to its docs"
    missing = [t for t in relative if not (ROOT / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_the_contract_paths_it_names_exist() -> None:
    for name in re.findall(r"`((?:server/torchtriage/)?(?:runtime/[a-z]+|output)/[A-Z_]+\.md)`", README):
        path = ROOT / (name if name.startswith("server/") else f"server/torchtriage/{name}")
        assert path.is_file(), name
