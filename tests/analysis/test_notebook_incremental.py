"""A notebook analysed incrementally (NotebookAnalyzer) finds exactly what a fresh analysis finds.

Random edits inside cells (typing, deleting, breaking and mending syntax,
IPython magics) are applied to a notebook; after each one the incremental
result is compared with a fresh ``analyze_cells`` of the same cells.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from torchtriage.analysis.notebooks import NotebookAnalyzer, analyze_cells, build_virtual_module
from torchtriage.config import Settings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from lsp_bench import NOTEBOOK_TRAIN, notebook_cells  # noqa: E402  (the benchmark's 20-cell notebook)

LINES = [
    "",
    "# a comment",
    "x = 1",
    "    y = 2",
    "    total += loss.item()",
    "def f():",
    "    return 1",
    "@decorator",
    "if True:",
    "a = (",
    ")",
    '"""',
    "%timeit f()",
    "!ls",
    "await asyncio.sleep(0)",
    "print(loss.item()); z = 1",
]
FRAGMENTS = ["(", ")", ":", '"', "\\", "#", "    ", "x", ".item()", "\n", "="]
PATH = "bench.ipynb"


def _edit_cell(cells: list[str], rng: random.Random) -> list[str]:
    """One random edit inside one cell."""
    cells = list(cells)
    index = rng.randrange(len(cells))
    text = cells[index]
    lines = text.split("\n")
    at = rng.randrange(len(lines) + 1)
    kind = rng.randrange(4)
    if kind == 0:
        lines.insert(at, rng.choice(LINES))
    elif kind == 1 and len(lines) > 1:
        del lines[min(at, len(lines) - 1)]
    elif kind == 2:
        lines[min(at, len(lines) - 1)] = rng.choice(LINES)
    else:
        offset = rng.randrange(len(text) + 1)
        cells[index] = text[:offset] + rng.choice(FRAGMENTS) + text[offset:]
        return cells
    cells[index] = "\n".join(lines)
    return cells


def test_random_cell_edits_find_what_a_fresh_analysis_finds() -> None:
    rng = random.Random("notebook")
    cells = notebook_cells(blocks=4)
    analyzer = NotebookAnalyzer(PATH)
    assert analyzer.analyze(cells) == analyze_cells(cells, PATH)
    last_good = cells
    partial = 0
    for _ in range(150):
        cells = _edit_cell(cells, rng) if rng.random() < 0.7 else last_good
        found = analyzer.analyze(cells)
        assert found == analyze_cells(cells, PATH)
        if not any(f.code == "TT000" for f in found):
            last_good = cells
        total = len(build_virtual_module(cells).source.splitlines())
        partial += analyzer.reparsed_lines is not None and analyzer.reparsed_lines < total
    assert partial > 50, "most edits should re-parse only part of the notebook"


def test_an_edit_in_one_cell_reparses_only_the_statement_it_touched() -> None:
    cells = notebook_cells()
    settings = Settings(select=("TT101", "TT301", "TT303"))
    analyzer = NotebookAnalyzer(PATH)
    first = analyzer.analyze(cells, settings)
    assert analyzer.reparsed_lines == len(build_virtual_module(cells).source.splitlines())  # ~600
    train = cells.index(NOTEBOOK_TRAIN)
    edited = list(cells)
    edited[train] = NOTEBOOK_TRAIN.replace("        total += loss.item()\n", "        total += loss.detach()\n")
    second = analyzer.analyze(edited, settings)
    assert analyzer.reparsed_lines is not None and analyzer.reparsed_lines <= 11  # the epoch loop only
    assert second == analyze_cells(edited, PATH, settings)
    assert [f.code for f in first if f.cell.cell == train] == ["TT301", "TT301", "TT101"]
    assert [f.code for f in second if f.cell.cell == train] == ["TT301", "TT301"]
    assert analyzer.analyze(edited, settings) == second and analyzer.reparsed_lines == 0  # nothing changed


def test_a_broken_cell_then_mended_matches_a_fresh_analysis() -> None:
    cells = notebook_cells(blocks=2)
    analyzer = NotebookAnalyzer(PATH)
    analyzer.analyze(cells)
    train = cells.index(NOTEBOOK_TRAIN)
    broken = list(cells)
    broken[train] = NOTEBOOK_TRAIN.replace("loss.backward()", "loss.backward(")
    found = analyzer.analyze(broken)
    assert found == analyze_cells(broken, PATH)
    assert [f.cell.cell for f in found if f.code == "TT000"] == [train]
    assert analyzer.reparsed_lines is not None  # the module with the broken cell blanked parsed
    mended = list(cells)
    mended[train] = NOTEBOOK_TRAIN.replace("loss.backward()", "loss.backward()  # mended")
    assert analyzer.analyze(mended) == analyze_cells(mended, PATH)
