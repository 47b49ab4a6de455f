"""Bad input through the real CLI: one TT000 finding or a stderr note, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import write


def test_syntax_error_text_and_json(tt, tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "import torch\n\nfor x in loader\n    pass\n")
    text = tt("check", "broken.py")
    assert text.returncode == 1 and "Traceback" not in text.stderr
    assert text.stdout.startswith("broken.py:3:")
    assert "TT000 SyntaxError: " in text.stdout
    [finding] = json.loads(tt("check", "--format", "json", "broken.py").stdout)
    assert (finding["code"], finding["name"], finding["line"], finding["severity"]) == (
        "TT000",
        "syntax-error",
        3,
        "error",
    )


def test_syntax_errors_ignore_selection(tt, tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "import torch\nx = (\n")
    result = tt("check", "--select", "TT301", "--format", "json", "broken.py")
    assert [f["code"] for f in json.loads(result.stdout)] == ["TT000"]


def test_fix_leaves_a_broken_file_alone(tt, tmp_path: Path) -> None:
    path = write(tmp_path / "broken.py", "import torch\nfor x in loader:\n    x = x.to('cuda')\n    x = (\n")
    before = path.read_text()
    result = tt("check", "--fix", "broken.py")
    assert result.returncode == 1 and path.read_text() == before
    assert "Traceback" not in result.stderr


def test_pathological_sources(tt, tmp_path: Path) -> None:
    write(tmp_path / "deep.py", "import torch\nx = " + "+".join(["a"] * 50000) + "\n")
    write(tmp_path / "parens.py", "import torch\nx = " + "(" * 500 + ")" * 500 + "\n")
    (tmp_path / "late_nul.py").write_bytes(b"import torch\n" + b"# pad\n" * 2000 + b"x = 1\x00\n")
    write(tmp_path / "empty.py", "")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\n")
    result = tt("check", "--format", "json", ".")
    assert "Traceback" not in result.stderr
    found = {(f["path"], f["code"]) for f in json.loads(result.stdout)}
    assert found == {("deep.py", "TT000"), ("parens.py", "TT000"), ("late_nul.py", "TT000")}


def test_null_bytes_near_the_start_mean_binary(tt, tmp_path: Path) -> None:
    (tmp_path / "nul.py").write_bytes(b"import torch\nx = 1\x00\n")
    result = tt("check", "nul.py")
    assert result.returncode == 1
    assert "nul.py: skipped: binary file (contains NUL bytes)" in result.stderr


def test_notebook_that_is_not_a_notebook(tt, tmp_path: Path) -> None:
    write(tmp_path / "list.ipynb", "[1, 2, 3]")
    result = tt("check", "list.ipynb")
    assert result.returncode == 1
    assert "list.ipynb: not a Jupyter notebook: no top-level 'cells' list" in result.stderr
    assert "Traceback" not in result.stderr
