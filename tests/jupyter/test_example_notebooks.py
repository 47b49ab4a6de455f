"""Each example notebook's text promises exactly the codes the linter reports on it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchtriage.analysis.notebooks import analyze_notebook
from torchtriage.config import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def promised(notebook: dict) -> set[str]:
    text = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    return set(re.findall(r"\bTT\d{3}\b", text))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_text_names_the_codes_that_fire(path):
    text = path.read_text(encoding="utf-8")
    fired = {f.code for f in analyze_notebook(text, str(path), Settings())}
    codes = promised(json.loads(text))
    assert codes, f"{path.name} names no codes in its text"
    assert codes == fired, f"{path.name}: its text names {sorted(codes)}, the linter reports {sorted(fired)}"


def test_there_is_an_example_notebook():
    assert NOTEBOOKS
