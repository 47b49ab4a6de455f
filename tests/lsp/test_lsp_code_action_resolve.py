"""Fix-all resolved lazily for a client that resolves edits, eagerly for one that does not.

Two real server processes side by side: ``resolving`` declares
``codeAction.resolveSupport`` for ``edit`` (and ``dataSupport``), ``eager``
declares neither (the conftest client's capabilities).
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_helpers import (
    DATA,
    RESOLVING,
    SELECT,
    SERVER,
    apply_workspace_edit,
    cell_uri,
    codes,
    edit,
    make_client,
    open_notebook,
    open_text,
    start,
    wait_for,
)

EXAMPLE = (DATA / "train_example.py").read_text()
URI = (DATA / "train_example.py").as_uri()
FIX_ALL = "source.fixAll.torchtriage"
CELLS = [
    'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")\n'
    "loader = DataLoader(ds, batch_size=8, num_workers=2)\n",
    "for x, y in loader:\n    x, y = x.to(device), y.to(device)\n    loss = model(x).sum()\n    loss.backward()\n",
]
CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


@pytest_lsp.fixture(config=CONFIG)
async def resolving(lsp_client: LanguageClient):
    result = await start(lsp_client, options={"select": SELECT}, capabilities=RESOLVING)
    lsp_client.initialize_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def eager(lsp_client: LanguageClient):
    await start(lsp_client, options={"select": SELECT})
    yield
    await lsp_client.shutdown_session()


async def actions_at(
    client: LanguageClient, uri: str, line: int, only: list[str] | None = None
) -> list[types.CodeAction]:
    here = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=here,
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def fix_all_of(actions: list[types.CodeAction]) -> types.CodeAction:
    [action] = [a for a in actions if a.kind == FIX_ALL]
    return action


async def test_the_resolved_fix_all_edit_is_the_eager_one(resolving: LanguageClient, eager: LanguageClient):
    provider = resolving.initialize_result.capabilities.code_action_provider  # type: ignore[attr-defined]
    assert provider.resolve_provider is True
    for client in (resolving, eager):
        open_text(client, URI, EXAMPLE, version=7)
    lazy = fix_all_of(await actions_at(resolving, URI, 9))
    assert lazy.edit is None and lazy.data == {"uri": URI, "version": 7}
    assert lazy.title == "torchtriage: fix all safely fixable findings"
    eager_action = fix_all_of(await actions_at(eager, URI, 9))
    assert eager_action.edit is not None and eager_action.data is None

    resolved = await resolving.code_action_resolve_async(lazy)
    assert resolved.edit == eager_action.edit
    assert (resolved.title, resolved.kind) == (eager_action.title, eager_action.kind)
    fixed = apply_workspace_edit(EXAMPLE, URI, resolved.edit)
    assert "x.to(device, non_blocking=True), y.to(device, non_blocking=True)" in fixed
    assert "pin_memory=True" in fixed


async def test_a_notebook_cell_resolves_to_the_eager_edit(resolving: LanguageClient, eager: LanguageClient):
    for client in (resolving, eager):
        open_notebook(client, CELLS)
        await wait_for(lambda: codes(client.diagnostics.get(cell_uri(1))) == ["TT301", "TT301"], what="TT301s")
    lazy = fix_all_of(await actions_at(resolving, cell_uri(1), 1))
    assert lazy.edit is None and lazy.data == {"uri": cell_uri(1), "version": 1}
    eager_action = fix_all_of(await actions_at(eager, cell_uri(1), 1))
    resolved = await resolving.code_action_resolve_async(lazy)
    assert resolved.edit is not None and resolved.edit == eager_action.edit
    fixed = apply_workspace_edit(CELLS[1], cell_uri(1), resolved.edit)
    assert "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n" in fixed


async def test_quick_fixes_keep_their_edits_for_a_resolving_client(resolving: LanguageClient):
    open_text(resolving, URI, EXAMPLE, version=7)
    quick = await actions_at(resolving, URI, 9, only=[types.CodeActionKind.QuickFix])
    assert quick and all(a.edit is not None for a in quick)
    assert not any(a.kind == FIX_ALL for a in quick)


async def test_resolving_after_the_text_changed_is_content_modified(resolving: LanguageClient):
    open_text(resolving, URI, EXAMPLE, version=7)
    lazy = fix_all_of(await actions_at(resolving, URI, 0, only=["source.fixAll"]))
    edit(resolving, URI, 8, (0, 0), (0, 0), "# a new first line\n")
    with pytest.raises(JsonRpcException) as raised:
        await resolving.code_action_resolve_async(lazy)
    assert raised.value.code == -32801  # ContentModified: ask for the actions again
    again = fix_all_of(await actions_at(resolving, URI, 0, only=["source.fixAll"]))
    assert again.data == {"uri": URI, "version": 8}
    resolved = await resolving.code_action_resolve_async(again)
    assert resolved.edit.document_changes[0].text_document.version == 8


@pytest_lsp.fixture(config=CONFIG)
async def undebounced(lsp_client: LanguageClient):
    await start(lsp_client, options={"select": SELECT, "debounceMs": 0})
    yield
    await lsp_client.shutdown_session()


async def test_a_code_action_racing_a_scheduled_analysis_still_gets_the_fixes(undebounced: LanguageClient):
    """The change's own run and the code action's run both wait on the open's slow analysis; only one
    of them may analyse (they share the document's analyzer), so the fixes survive."""
    filler = "".join(f"\n\ndef helper_{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(1500))
    text = EXAMPLE + filler
    open_text(undebounced, URI, text, version=1)
    last = len(text.splitlines())
    for version in range(2, 7):
        await asyncio.sleep(0.1)  # the previous version's analysis is under way (it takes longer)
        edit(undebounced, URI, version, (last, 0), (last, 0), "# typed\n")
        last += 1
        await asyncio.sleep(0.02)  # the change's run has started and waits for it
        action = fix_all_of(await actions_at(undebounced, URI, 0, only=["source.fixAll"]))
        assert action.edit is not None and action.edit.document_changes[0].text_document.version == version


async def test_a_change_sent_while_fix_all_is_computed_is_read_at_once(resolving: LanguageClient):
    """Fix-all re-analyses the whole file per round, on an analysis thread: the event loop
    reads the change sent right after the resolve request while the fixes are computed, so
    the resolve fails as content modified instead of holding the change back until it is done."""
    filler = "".join(f"\n\ndef helper_{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(1500))
    text = EXAMPLE + filler
    open_text(resolving, URI, text, version=1)
    lazy = fix_all_of(await actions_at(resolving, URI, 0, only=["source.fixAll"]))
    assert lazy.data == {"uri": URI, "version": 1}
    resolving_task = asyncio.ensure_future(resolving.code_action_resolve_async(lazy))
    await asyncio.sleep(0.1)  # the server has begun the fixes (a fresh analysis of 7,500 lines takes longer)
    last = len(text.splitlines())
    edit(resolving, URI, 2, (last, 0), (last, 0), "# typed while the fixes are computed\n")
    with pytest.raises(JsonRpcException) as raised:
        await resolving_task
    assert raised.value.code == -32801  # ContentModified: the text moved on during the computation
    await wait_for(lambda: 2 in resolving.published_versions.get(URI, []), what="the change's diagnostics")
    again = fix_all_of(await actions_at(resolving, URI, 0, only=["source.fixAll"]))
    resolved = await resolving.code_action_resolve_async(again)
    assert resolved.edit.document_changes[0].text_document.version == 2
    assert "non_blocking=True" in apply_workspace_edit(text + "# typed while the fixes are computed\n", URI, resolved.edit)
