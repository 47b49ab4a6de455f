"""The part of a project a run executes (``analysis/project/closure.py``): named files and what they import."""

from __future__ import annotations

from pathlib import Path

from torchtriage.analysis.project.closure import import_closure


def _project(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_the_closure_follows_absolute_relative_and_from_imports_but_not_the_rest(tmp_path: Path) -> None:
    files = _project(tmp_path, {
        "scripts/train.py": "import torch\nfrom pkg.model import Net\nimport pkg.data as data\n",
        "pkg/__init__.py": "",
        "pkg/model.py": "from .layers import block\nfrom . import init\n",
        "pkg/layers.py": "import math\n",
        "pkg/init.py": "",
        "pkg/data.py": "from pkg.util import io\n",
        "pkg/util/__init__.py": "",
        "pkg/util/io.py": "",
        "pkg/unused.py": "import pkg.model\n",
        "tests/test_model.py": "from pkg.model import Net\n",
        "tools/broken.py": "def (:\n",
    })
    kept = import_closure(tmp_path, files, [tmp_path / "scripts/train.py"])
    names = sorted(p.relative_to(tmp_path.resolve()).as_posix() for p in kept)
    assert names == ["pkg/__init__.py", "pkg/data.py", "pkg/init.py", "pkg/layers.py", "pkg/model.py",
                     "pkg/util/__init__.py", "pkg/util/io.py", "scripts/train.py"]


def test_a_project_whose_root_is_not_the_import_root_resolves_by_the_name_s_tail(tmp_path: Path) -> None:
    files = _project(tmp_path, {
        "src/mylib/__init__.py": "",
        "src/mylib/core.py": "from mylib import helpers\n",
        "src/mylib/helpers.py": "",
        "train.py": "import mylib.core\n",
    })
    kept = {p.name for p in import_closure(tmp_path, files, [tmp_path / "train.py"])}
    assert kept == {"train.py", "__init__.py", "core.py", "helpers.py"}


def test_seeds_that_do_not_parse_or_sit_outside_are_kept(tmp_path: Path) -> None:
    files = _project(tmp_path, {"a.py": "def (:\n", "b.py": ""})
    outside = tmp_path.parent / "elsewhere.py"
    kept = import_closure(tmp_path, files, [tmp_path / "a.py", outside])
    assert [p.name for p in kept] == ["a.py", outside.name]
