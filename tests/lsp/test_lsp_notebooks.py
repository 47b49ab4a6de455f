"""Notebook documents: cells analysed together, findings published per cell."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import apply_workspace_edit, cell_uri, change_cell, codes, open_notebook, wait_for

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
