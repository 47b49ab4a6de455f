"""Hover, code lenses, settings and robustness against a real server process."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, codes, edit, open_text, replace_all, wait_for

EXAMPLE = (DATA / "train_example.py").read_text()
URI = (DATA / "train_example.py").as_uri()


def doc(uri: str = URI) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def test_hover_explains_the_rule(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    await wait_for(lambda: client.diagnostics.get(URI), what="diagnostics")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(), position=types.Position(line=14, character=14))
    )
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "**TT101**" in text and "## Why" in text and "## Fix" in text
    assert "`torchtriage explain TT101`" in text
    nothing = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(), position=types.Position(line=0, character=2))
    )
    assert nothing is None


async def test_code_lens_on_step_loop_header(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc()))
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in lenses] == [
        (8, "▶ Profile this script", "torchtriage.profile")
    ]
    assert list(lenses[0].command.arguments) == [URI]
    # The lens follows the loop when lines are inserted above it.
    edit(client, URI, 2, (0, 0), (0, 0), "# one\n# two\n")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc()))
    assert [lens.range.start.line for lens in lenses] == [10]


async def test_configuration_change_and_bad_values(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    await wait_for(lambda: "TT101" in codes(client.diagnostics.get(URI)), what="TT101")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchtriage": {"ignore": ["TT101"], "device": "gpu"}})
    )
    await wait_for(lambda: "TT101" not in codes(client.diagnostics[URI]), what="TT101 ignored")
    await wait_for(lambda: client.messages, what="a settings message")
    assert "device" in client.messages[-1].message and client.messages[-1].type == types.MessageType.Warning


async def test_unknown_and_malformed_requests_get_errors_and_server_keeps_serving(client: LanguageClient):
    open_text(client, URI, EXAMPLE)
    with pytest.raises(JsonRpcException):
        await client.protocol.send_request_async("torchtriage/noSuchMethod", {})
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.profile", arguments=[42]))
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.nope"))
    # hover on a document nobody opened, and a position far outside the text
    assert await client.text_document_hover_async(
        types.HoverParams(text_document=doc("file:///nowhere.py"), position=types.Position(line=0, character=0))
    ) is None
    assert await client.text_document_hover_async(
        types.HoverParams(text_document=doc(), position=types.Position(line=10_000, character=10_000))
    ) is None
    replace_all(client, URI, EXAMPLE + "\n# still alive\n", version=2)
    await wait_for(lambda: client.published_versions[URI][-1] == 2, what="diagnostics after errors")


async def test_large_file_stays_responsive(client: LanguageClient):
    body = "".join(
        f"def helper_{i}(x):\n    y = x * {i}\n    return y + 1\n\n" for i in range(3000)
    )  # 12,000 lines
    big = EXAMPLE + body
    uri = (DATA / "big_generated.py").as_uri()
    open_text(client, uri, big)
    # While it is analysed, other requests are answered.
    open_text(client, URI, EXAMPLE)
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(text_document=doc(), position=types.Position(line=0, character=0))),
        timeout=30,
    )
    assert hover is None
    diagnostics = await wait_for(lambda: client.diagnostics.get(uri), timeout=60, what="big file diagnostics")
    assert "TT101" in codes(diagnostics)


async def test_pyproject_is_honoured_and_reloaded(client: LanguageClient, tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.torchtriage]\nignore = ["TT101"]\n')
    script = tmp_path / "train.py"
    script.write_text(EXAMPLE)
    uri = script.as_uri()
    open_text(client, uri, EXAMPLE)
    await wait_for(lambda: client.diagnostics.get(uri), what="diagnostics")
    assert "TT101" not in codes(client.diagnostics[uri])
    pyproject.write_text('[tool.torchtriage]\nignore = ["TT303"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    await wait_for(lambda: "TT101" in codes(client.diagnostics[uri]), what="TT101 back after the reload")
    assert "TT303" not in codes(client.diagnostics[uri])


def test_bad_tcp_address_is_a_usage_error() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "torchtriage", "lsp", "--tcp", "localhost:abc"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "--tcp wants HOST:PORT" in done.stderr and "Traceback" not in done.stderr


async def test_show_report_opens_the_html_report_else_the_json(client: LanguageClient, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text("{}")
    shown = client.shown_documents  # type: ignore[attr-defined]

    async def show(path: str) -> object:
        return await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchtriage.showReport", arguments=[path])
        )

    assert await show(str(run / "report.json")) is True
    assert shown[-1].uri == (run / "report.json").as_uri() and not shown[-1].external
    (run / "report.html").write_text("<html></html>")
    assert await show(str(run / "report.json")) is True
    assert shown[-1].uri == (run / "report.html").as_uri() and shown[-1].external  # the browser
    with pytest.raises(JsonRpcException, match="report path"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.showReport"))
