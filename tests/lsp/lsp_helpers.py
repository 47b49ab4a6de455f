"""Helpers for the language-server tests: client construction, polling, edits."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient as _Client
from pygls.protocol import default_converter

DATA = Path(__file__).parent / "data"
SERVER = [sys.executable, "-m", "torchtriage", "lsp"]
SELECT = ["TT101", "TT301", "TT303"]  # rules under test: new rules must not change these tests

CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
    ),
    workspace=types.WorkspaceClientCapabilities(configuration=True),
)


# A client that resolves code-action edits lazily (as VS Code does).
RESOLVING = types.ClientCapabilities(
    window=CAPABILITIES.window,
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=CAPABILITIES.text_document.publish_diagnostics,
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix", "source.fixAll"])
            ),
            data_support=True,
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
        ),
    ),
    workspace=CAPABILITIES.workspace,
)


def make_client() -> LanguageClient:
    """pytest-lsp's client, also recording publish versions and profile reports."""
    client = _Client(converter_factory=default_converter)
    client.published_versions = {}  # type: ignore[attr-defined]
    client.profile_reports = []  # type: ignore[attr-defined]
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        if method not in (types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.WORKSPACE_DIAGNOSTIC_REFRESH):
            client.feature(method)(handler)
    client.refreshes = 0  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
    def refresh(params: None) -> None:
        client.refreshes += 1  # type: ignore[attr-defined]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published_versions.setdefault(params.uri, []).append(params.version)  # type: ignore[attr-defined]

    client.applied_edits = []  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature("torchtriage/profileReport")
    def profile_report(params: Any) -> None:
        client.profile_reports.append(params)  # type: ignore[attr-defined]

    return client


async def start(
    lsp_client: LanguageClient,
    options: Any = None,
    root: Path | None = None,
    capabilities: types.ClientCapabilities = CAPABILITIES,
) -> types.InitializeResult:
    """Initialize the session; the server's answer."""
    return await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=(root or DATA).as_uri(),
            initialization_options=options,
        )
    )


async def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll until ``predicate()`` is truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (KeyError, IndexError, StopIteration):
            value = None
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def open_text(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def edit(client: LanguageClient, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=start[0], character=start[1]),
                        end=types.Position(line=end[0], character=end[1]),
                    ),
                    text=text,
                )
            ],
        )
    )


def codes(diagnostics: Any) -> list[str]:
    return sorted(str(d.code) for d in diagnostics or ())


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits the way an editor does (UTF-16 columns, last edit first)."""
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units, index = 0, 0
        while index < len(line) and units < position.character:
            units += len(line[index].encode("utf-16-le")) // 2
            index += 1
        return before + index

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def apply_workspace_edit(text: str, uri: str, edit: types.WorkspaceEdit) -> str:
    edits: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        edits.extend(change.edits)  # type: ignore[arg-type]
    for changed_uri, plain in (edit.changes or {}).items():
        assert changed_uri == uri
        edits.extend(plain)
    return apply_text_edits(text, edits)


# --- notebooks -------------------------------------------------------------------

NOTEBOOK = (DATA / "example.ipynb").as_uri()


def cell_uri(index: int) -> str:
    """A cell URI as VS Code writes it: a base64 fragment with its padding percent-encoded."""
    return f"vscode-notebook-cell:{DATA / 'example.ipynb'}#W{index}sZmlsZQ%3D%3D"


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
    """Replace one cell's whole text."""
    _change_cell(client, index, version, types.TextDocumentContentChangeWholeDocument(text=text))


def edit_cell(
    client: LanguageClient, index: int, version: int, start: tuple[int, int], end: tuple[int, int], text: str
) -> None:
    """A partial edit inside one cell (0-based cell lines and columns)."""
    where = types.Range(start=types.Position(*start), end=types.Position(*end))
    _change_cell(client, index, version, types.TextDocumentContentChangePartial(range=where, text=text))


def _change_cell(client: LanguageClient, index: int, version: int, change: types.TextDocumentContentChangeEvent) -> None:
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=NOTEBOOK, version=version),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cell_uri(index), version=version),
                            changes=[change],
                        )
                    ]
                )
            ),
        )
    )


