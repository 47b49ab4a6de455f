"""Notebook documents: cells analysed together, findings published per cell."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import (
    DATA,
    SELECT,
    apply_text_edits,
    apply_workspace_edit,
    cell_uri,
    change_cell,
    codes,
    edit_cell,
    open_notebook,
    wait_for,
)

CELLS = [
    'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")\n'
    "loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)\n",
    "%matplotlib inline\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum()\n    loss.backward()\n",
    "print('done')\n",
]


async def test_finding_in_cell_two_depends_on_cell_one(client: LanguageClient):
    open_notebook(client, CELLS)
    diagnostics = await wait_for(lambda: client.diagnostics.get(cell_uri(1)), what="cell 2 diagnostics")
    assert codes(diagnostics) == ["TT301"]
    assert diagnostics[0].range == types.Range(
        start=types.Position(line=2, character=8), end=types.Position(line=2, character=20)
    )
    assert codes(client.diagnostics.get(cell_uri(0))) == []
    assert codes(client.diagnostics.get(cell_uri(2))) == []

    # The quick fix edits the cell, in the cell's coordinates.
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cell_uri(1)),
            range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=list(diagnostics)),
        )
    )
    fix = next(a for a in actions if a.title.startswith("Add non_blocking"))
    fixed = apply_workspace_edit(CELLS[1], cell_uri(1), fix.edit)
    assert "    x = x.to(device, non_blocking=True)\n" in fixed


async def test_editing_cell_one_reanalyses_the_notebook(client: LanguageClient):
    open_notebook(client, CELLS)
    await wait_for(lambda: codes(client.diagnostics.get(cell_uri(1))) == ["TT301"], what="TT301 in cell 2")
    # Without CUDA in cell 1, the CUDA-only rule no longer applies to cell 2.
    change_cell(client, 0, CELLS[0].replace('torch.device("cuda")', 'torch.device("cpu")'), version=2)
    await wait_for(lambda: codes(client.diagnostics.get(cell_uri(1))) == [], what="TT301 gone from cell 2")


async def test_syntax_error_in_one_cell_keeps_the_others(client: LanguageClient):
    open_notebook(client, CELLS)
    await wait_for(lambda: codes(client.diagnostics.get(cell_uri(1))) == ["TT301"], what="TT301 in cell 2")
    change_cell(client, 2, "print('done'\n", version=2)
    await wait_for(lambda: codes(client.diagnostics.get(cell_uri(2))) == ["TT000"], what="TT000 in cell 3")
    assert codes(client.diagnostics.get(cell_uri(1))) == ["TT301"]


async def test_partial_cell_edits_publish_what_a_fresh_analysis_finds(client: LanguageClient):
    """Partial edits inside cells that add, remove and change lines, break and mend the syntax
    and change what another cell sees: after each one the server (which re-parses only the
    statements an edit touched) publishes on every cell exactly what a fresh analysis of the
    notebook finds, at the same positions."""
    from torchtriage.analysis.notebooks import analyze_cells
    from torchtriage.config import Settings

    settings = Settings(select=tuple(SELECT))
    cells = list(CELLS)
    open_notebook(client, cells)
    await wait_for(lambda: all(_publishes(client, i) == 1 for i in range(len(cells))), what="first diagnostics")
    steps = [
        (0, (0, 0), (0, 0), "# a new first line\n"),  # shifts the cell's lines
        (1, (5, 0), (5, 0), "    total = loss.item()\n"),  # a new finding in the loop
        (1, (1, 0), (1, 0), "model.train()\n"),  # shifts the loop down
        (0, (0, 0), (1, 0), ""),  # removes a line
        (1, (3, 0), (3, 0), "    x = (\n"),  # breaks the syntax
        (1, (3, 0), (4, 0), ""),  # mends it
        (2, (1, 0), (1, 0), "\n\nfor batch in loader:\n    print(batch.sum().item())\n"),  # a loop in the last cell
        (0, (2, 23), (2, 27), "cpu"),  # no CUDA in the first cell: TT301 in the second goes
        (0, (2, 23), (2, 26), "cuda"),  # and comes back
        (1, (3, 8), (3, 20), "x.to(device, non_blocking=True)"),  # fixes it
    ]
    for version, (index, start, end, new_text) in enumerate(steps, start=2):
        edit_cell(client, index, version, start, end, new_text)
        where = types.Range(start=types.Position(*start), end=types.Position(*end))
        cells[index] = apply_text_edits(cells[index], [types.TextEdit(range=where, new_text=new_text)])
        await wait_for(
            lambda: client.published_versions[cell_uri(index)][-1] == version  # type: ignore[attr-defined]
            and all(_publishes(client, i) == version for i in range(len(cells))),
            what=f"diagnostics for version {version}",
        )
        expected = analyze_cells(cells, str(DATA / "example.ipynb"), settings)
        if any(f.code == "TT000" for f in expected):
            continue  # mid-typing: the broken cell keeps its last good findings (tested above)
        for i in range(len(cells)):
            published = sorted(
                (str(d.code), d.range.start.line + 1, d.range.start.character + 1) for d in client.diagnostics[cell_uri(i)]
            )
            assert published == sorted((f.code, f.span.line, f.span.column) for f in expected if f.cell.cell == i), version


def _publishes(client: LanguageClient, index: int) -> int:
    return len(client.published_versions.get(cell_uri(index), []))  # type: ignore[attr-defined]
