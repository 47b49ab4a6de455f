"""Code actions: each edit applied gives the expected text."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, apply_workspace_edit, codes, open_text, replace_all, wait_for

EXAMPLE = (DATA / "train_example.py").read_text()
URI = (DATA / "train_example.py").as_uri()


async def actions_at(client: LanguageClient, line: int, only: list[str] | None = None) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def opened(client: LanguageClient, text: str = EXAMPLE) -> None:
    open_text(client, URI, text, version=7)
    await wait_for(lambda: client.diagnostics.get(URI), what="diagnostics")


async def test_quick_fix_edit_is_versioned_and_fixes_the_finding(client: LanguageClient):
    await opened(client)
    actions = await actions_at(client, 9, only=[types.CodeActionKind.QuickFix])
    fixes = [a for a in actions if a.title.startswith("Add non_blocking=True")]
    assert len(fixes) == 2 and all(a.is_preferred for a in fixes)
    change = fixes[0].edit.document_changes[0]
    assert change.text_document.version == 7
    text = apply_workspace_edit(EXAMPLE, URI, fixes[0].edit)
    assert "    x, y = x.to(device, non_blocking=True), y.to(device)\n" in text
    replace_all(client, URI, text, version=8)
    await wait_for(lambda: codes(client.diagnostics[URI]).count("TT301") == 1, what="one TT301 left")


async def test_noqa_action_appends_then_extends(client: LanguageClient):
    await opened(client)
    noqa = [a for a in await actions_at(client, 14) if a.title.startswith("Suppress")]
    assert [a.title for a in noqa] == ["Suppress with `# noqa: TT101`"]
    text = apply_workspace_edit(EXAMPLE, URI, noqa[0].edit)
    assert "    total = loss.item()  # noqa: TT101\n" in text
    replace_all(client, URI, text, version=8)
    await wait_for(lambda: "TT101" not in codes(client.diagnostics[URI]), what="TT101 suppressed")

    existing = EXAMPLE.replace("x.to(device), y.to(device)", "x.to(device), y.to(device)  # noqa: TT999")
    replace_all(client, URI, existing, version=9)
    await wait_for(lambda: client.published_versions[URI][-1] == 9, what="version 9")
    noqa = [a for a in await actions_at(client, 9) if a.title.startswith("Suppress")]
    assert noqa, "a suppression action for TT301"
    text = apply_workspace_edit(existing, URI, noqa[0].edit)
    assert "y.to(device)  # noqa: TT999, TT301\n" in text


async def test_fix_all_applies_every_safe_fix(client: LanguageClient):
    await opened(client)
    actions = await actions_at(client, 0, only=["source.fixAll"])
    assert [a.kind for a in actions] == ["source.fixAll.torchtriage"]
    text = apply_workspace_edit(EXAMPLE, URI, actions[0].edit)
    assert "x.to(device, non_blocking=True), y.to(device, non_blocking=True)" in text
    assert "pin_memory=True" in text  # TT303's safe fix
    assert "total = loss.item()" in text  # TT101 has no automatic fix
    replace_all(client, URI, text, version=8)
    await wait_for(lambda: codes(client.diagnostics[URI]) == ["TT101"], what="only TT101 left")


async def test_fix_all_command_sends_the_edit_to_the_client(client: LanguageClient):
    await opened(client)
    applied = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.fixAll", arguments=[URI])
    )
    assert applied is True
    [request] = client.applied_edits  # type: ignore[attr-defined]
    assert request.label == "torchtriage: fix all"
    text = apply_workspace_edit(EXAMPLE, URI, request.edit)
    assert "non_blocking=True" in text and "pin_memory=True" in text
    with pytest.raises(JsonRpcException, match="not open"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchtriage.fixAll", arguments=[URI.replace("train_example", "nowhere")])
        )


async def test_quickfix_only_excludes_fix_all(client: LanguageClient):
    await opened(client)
    kinds = {a.kind for a in await actions_at(client, 9, only=[types.CodeActionKind.QuickFix])}
    assert kinds == {types.CodeActionKind.QuickFix}


async def test_an_edit_right_after_opening_gets_its_own_fixes(client: LanguageClient):
    """The first fix build imports libcst outside the document's slot: an edit sent right after
    the open is analysed meanwhile, the open's findings get no fixes, and the edit's do."""
    open_text(client, URI, EXAMPLE, version=7)
    await wait_for(lambda: 7 in client.published_versions.get(URI, []), what="the open's diagnostics")
    replace_all(client, URI, "# a first line\n" + EXAMPLE, version=8)
    await wait_for(lambda: 8 in client.published_versions.get(URI, []), what="the edit's diagnostics")
    actions = await actions_at(client, 10, only=[types.CodeActionKind.QuickFix])
    fixes = [a for a in actions if a.title.startswith("Add non_blocking=True")]
    assert len(fixes) == 2 and all(a.edit.document_changes[0].text_document.version == 8 for a in fixes)
    fixed = apply_workspace_edit("# a first line\n" + EXAMPLE, URI, fixes[0].edit)
    assert "    x, y = x.to(device, non_blocking=True), y.to(device)\n" in fixed
    assert all(d.data["fixable"] for d in client.diagnostics[URI] if d.code == "TT301")
