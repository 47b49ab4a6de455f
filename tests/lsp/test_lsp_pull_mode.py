"""A client that pulls diagnostics (as VS Code does) gets them only by pulling, never twice."""

from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_helpers import CAPABILITIES, DATA, SELECT, SERVER, codes, edit, make_client, open_text, wait_for

EXAMPLE = (DATA / "train_example.py").read_text()
URI = (DATA / "train_example.py").as_uri()

PULLING = types.ClientCapabilities(
    window=CAPABILITIES.window,
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=False),
    ),
    workspace=types.WorkspaceClientCapabilities(
        configuration=True, diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=PULLING, root_uri=DATA.as_uri(), initialization_options={"select": SELECT})
    )
    yield
    await lsp_client.shutdown_session()


async def pull(client: LanguageClient) -> list[types.Diagnostic]:
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=URI))
    )
    return report.items


async def test_diagnostics_are_pulled_not_pushed(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    assert codes(await pull(client)) == ["TT101", "TT301", "TT301", "TT303"]
    line = EXAMPLE.splitlines().index("    total = loss.item()")
    edit(client, URI, 2, (line, 0), (line + 1, 0), "")
    assert codes(await pull(client)) == ["TT301", "TT301", "TT303"]  # the pull waits for the edit's analysis
    await asyncio.sleep(0.3)
    assert URI not in client.diagnostics  # nothing was pushed


async def test_a_settings_change_asks_the_client_to_pull_again(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    await pull(client)
    before = client.refreshes  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"select": ["TT303"]}))
    await wait_for(lambda: client.refreshes > before, what="workspace/diagnostic/refresh")  # type: ignore[attr-defined]
    assert codes(await pull(client)) == ["TT303"]
