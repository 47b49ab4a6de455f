"""Notebook documents: cells analysed together, findings published per cell."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, apply_workspace_edit, codes, wait_for

NOTEBOOK = (DATA / "example.ipynb").as_uri()
CELLS = [
    'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")\n'
    "loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)\n",
    "%matplotlib inline\nfor x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum()\n    loss.backward()\n",
    "print('done')\n",
]


def cell_uri(index: int) -> str:
    return f"vscode-notebook-cell:{DATA / 'example.ipynb'}#cell{index}"


def open_notebook(client: LanguageClient, cells: list[str]) -> None:
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=NOTEBOOK,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell_uri(i)) for i in range(len(cells))],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell_uri(i), language_id="python", version=1, text=text)
                for i, text in enumerate(cells)
            ],
        )
    )


def change_cell(client: LanguageClient, index: int, text: str, version: int) -> None:
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=NOTEBOOK, version=version),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cell_uri(index), version=version),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            ),
        )
    )


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
