"""Notebooks: virtual module and line map, IPython neutralised, findings and fixes per cell."""

from __future__ import annotations

import json

import pytest

from torchtriage.analysis.ipython_magics import neutralise_cell
from torchtriage.analysis.notebooks import analyze_notebook, build_virtual_module, fix_notebook
from torchtriage.config import Settings
from torchtriage.findings import CellLocation, Edit, Span

TT301 = Settings(select=("TT301",))

SETUP = 'import torch\ndevice = torch.device("cuda")\n'
LOOP = "for x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum()\n    loss.backward()"


def notebook(*cells: str | tuple[str, str], indent: int = 1, as_list: bool = True, **metadata) -> str:
    """An nbformat-4 notebook; a tuple cell is (cell_type, source)."""
    items = []
    for cell in cells:
        kind, source = cell if isinstance(cell, tuple) else ("code", cell)
        item = {"cell_type": kind, "metadata": {"tags": ["keep"]}, "source": source.splitlines(True) if as_list else source}
        if kind == "code":
            item.update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout", "text": ["ü\n"]}])
        items.append(item)
    data = {"cells": items, "metadata": metadata or {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


# --- virtual module -------------------------------------------------------------------


def test_line_map_round_trips() -> None:
    module = build_virtual_module(["a = 1\nb = 2", "", "c = 3\n", "\n\nd = 4\n"])
    assert module.source == "a = 1\nb = 2\nc = 3\n\n\nd = 4\n"
    assert [module.to_cell(line) for line in range(1, 7)] == [(0, 1), (0, 2), (2, 1), (3, 1), (3, 2), (3, 3)]
    for line in range(1, 7):
        assert module.from_cell(*module.to_cell(line)) == line
    assert module.to_cell(99) == (3, 96)  # past the end: the last cell


def test_edits_map_to_cells_but_never_across_or_into_magics() -> None:
    module = build_virtual_module(["x = 1\n%time y = 2\n", "z = 3\n"])
    assert module.edit_to_cell(Edit(Span(3, 1, 3, 2), "w")) == (1, Edit(Span(1, 1, 1, 2), "w"))
    # Deleting the cell's last whole line ends on the next cell's first line: still this cell.
    assert module.edit_to_cell(Edit(Span(1, 1, 2, 1), "")) == (0, Edit(Span(1, 1, 2, 1), ""))
    assert module.edit_to_cell(Edit(Span(2, 1, 2, 3), "")) is None  # a neutralised line
    assert module.edit_to_cell(Edit(Span(2, 1, 2, 1), "a = 0\n")) is not None  # insertion before it
    assert module.edit_to_cell(Edit(Span(1, 1, 3, 2), "")) is None  # across cells


@pytest.mark.parametrize(
    ("cell", "expected", "changed"),
    [
        ("%time x = 1\ny = 2\n", "pass\ny = 2\n", {1}),
        ("for a in b:\n    !pip install x\n", "for a in b:\n    pass\n", {2}),
        ("files = !ls\nout = %sx ls\n", "files = None\nout = None\n", {1, 2}),
        ("%%bash\necho hi\nls\n", "\n\n\n", {1, 2, 3}),
        ("%%writefile f.py\nimport os\n", "\n\n", {1, 2}),
        ("%%time\nfor x in y:\n    f(x)\n", "\nfor x in y:\n    f(x)\n", {1}),
        ("%%capture out\nx = 1", "\nx = 1", {1}),
        ("%%torchtriage\nx = 1\n", "\nx = 1\n", {1}),
        ("?torch.cuda\ntorch.zeros??\n", "pass\npass\n", {1, 2}),
        ("s = '''\n%not a magic\n'''\n", "s = '''\n%not a magic\n'''\n", set()),
        ("z = (a\n  % b)\n", "z = (a\n  % b)\n", set()),
        ("x = 1 + \\\n% 3\n", "x = 1 + \\\n% 3\n", set()),
        ("if a:\n    %debug\nelse:\n    pass\n", "if a:\n    pass\nelse:\n    pass\n", {2}),
        ("x = 1\r\n%time y\r\n", "x = 1\r\npass\r\n", {2}),
    ],
)
def test_neutralise(cell: str, expected: str, changed: set[int]) -> None:
    result = neutralise_cell(cell)
    assert (result.text, set(result.changed_lines)) == (expected, changed)
    assert len(result.text.splitlines()) == len(cell.splitlines())


# --- analysis ---------------------------------------------------------------------------


def test_findings_carry_cell_and_cell_local_spans() -> None:
    text = notebook(("markdown", "# Training"), "!pip install torch\n" + SETUP, "%%time\n" + LOOP)
    [finding] = analyze_notebook(text, "nb.ipynb", TT301)
    assert finding.path == "nb.ipynb"
    assert finding.cell == CellLocation(cell=2, line=3, end_line=3)
    assert finding.span == Span(3, 9, 3, 21)
    assert finding.to_json()["cell"] == {"cell": 2, "line": 3, "end_line": 3}
    [edit] = finding.fix.edits
    assert edit.span == Span(3, 9, 3, 21) and edit.content == "x.to(device, non_blocking=True)"


def test_top_level_await_in_a_cell_is_valid_notebook_code() -> None:
    text = notebook("import asyncio\nawait asyncio.sleep(0)\n" + SETUP, LOOP)
    findings = analyze_notebook(text, "nb.ipynb", TT301)
    assert [(f.code, f.cell.cell) for f in findings] == [("TT301", 1)]


def test_a_broken_cell_reports_tt000_and_does_not_hide_the_others() -> None:
    text = notebook(SETUP, "def broken(:\n    pass\n", LOOP, "print('''unterminated\n")
    findings = analyze_notebook(text, "nb.ipynb", TT301)
    assert [(f.code, f.cell.cell) for f in findings] == [("TT000", 1), ("TT301", 2), ("TT000", 3)]
    assert findings[0].span.line == 1


def test_non_python_kernel_and_empty_notebook() -> None:
    assert analyze_notebook(notebook(SETUP + LOOP, language_info={"name": "R"}), "r.ipynb", TT301) == []
    assert analyze_notebook(notebook(("markdown", "hi")), "md.ipynb", TT301) == []
    assert analyze_notebook(notebook(), "empty.ipynb", TT301) == []


def test_noqa_in_cells() -> None:
    line_noqa = notebook(SETUP, LOOP.replace("x.to(device)", "x.to(device)  # noqa: TT301"))
    assert analyze_notebook(line_noqa, "nb.ipynb", TT301) == []
    file_noqa = notebook("# torchtriage: noqa\n" + SETUP, LOOP)
    assert analyze_notebook(file_noqa, "nb.ipynb", TT301) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a valid notebook: invalid JSON at line 1"),
        ("[1, 2]", "not a Jupyter notebook"),
        ('{"worksheets": []}', "nbformat 3"),
        ('{"cells": [{"cell_type": "code", "source": 7}]}', "'source'"),
        ("", "not a valid notebook"),
    ],
)
def test_not_a_notebook_is_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        analyze_notebook(text, "x.ipynb", TT301)


# --- fixes ------------------------------------------------------------------------------


@pytest.mark.parametrize("indent", [1, 2, 4])
@pytest.mark.parametrize("as_list", [True, False])
def test_fix_rewrites_only_the_cell_and_keeps_the_file_style(indent: int, as_list: bool) -> None:
    text = notebook(("markdown", "# T"), SETUP, "%%time\n" + LOOP, indent=indent, as_list=as_list)
    new_text, applied, remaining = fix_notebook(text, "nb.ipynb", TT301)
    assert applied == 1 and remaining == []
    expected = text.replace("x.to(device)", "x.to(device, non_blocking=True)")
    assert new_text == expected  # outputs, metadata, magics, indentation, non-ASCII: untouched
    again = fix_notebook(new_text, "nb.ipynb", TT301)
    assert again == (new_text, 0, [])


def test_fix_skips_noqa_and_keeps_ascii_escaped_files_ascii() -> None:
    cells = [SETUP, LOOP + "\n    y = y.to(device)  # noqa\n    x2 = x.to(device)  # é"]
    text = json.dumps(json.loads(notebook(*cells)), indent=1) + "\n"  # ensure_ascii escapes é
    assert text.isascii()
    new_text, applied, _ = fix_notebook(text, "nb.ipynb", Settings(select=("TT301",), device="cuda"))
    assert new_text.isascii() and applied >= 1
    source = "".join(json.loads(new_text)["cells"][1]["source"])
    assert "y = y.to(device)  # noqa" in source
    assert "x.to(device, non_blocking=True)" in source


def test_fix_never_edits_magic_lines() -> None:
    cell = "for x, y in loader:\n    %time x = x.to(device)\n    x = x.to(device)\n    model(x).sum().backward()\n"
    new_text, applied, _ = fix_notebook(notebook(SETUP, cell), "nb.ipynb", TT301)
    source = "".join(json.loads(new_text)["cells"][1]["source"])
    assert "    %time x = x.to(device)\n" in source
    assert applied == 1 and "    x = x.to(device, non_blocking=True)\n" in source


def test_nothing_to_fix_returns_the_text_unchanged() -> None:
    text = notebook(SETUP).replace("\n", "\r\n")
    assert fix_notebook(text, "nb.ipynb", TT301) == (text, 0, [])
