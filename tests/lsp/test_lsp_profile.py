"""torchtriage.profile end to end: a real run of a tiny CPU script through the runtime."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, NOTEBOOK, cell_uri, edit, open_notebook, open_text, wait_for
from process_support import alive

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torchtriage.runtime.profiling.finish") is None or importlib.util.find_spec("torch") is None,
        reason="needs the runtime bridge and torch",
    ),
]

EVERYTHING = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1000, character=0))


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def hints(client: LanguageClient, uri: str) -> list[types.InlayHint]:
    return await client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc(uri), range=EVERYTHING)) or []


def profile_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, ()) if d.source == "torchtriage-profile"]


async def test_profile_reports_progress_hints_diagnostics_and_lens(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "tiny_train.py"
    shutil.copy(DATA / "tiny_train.py", script)
    uri = script.as_uri()
    text = script.read_text()
    open_text(client, uri, text)
    assert await hints(client, uri) == []  # nothing runs without the command

    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri])
    )
    assert result["uri"] == uri and result["summary"]["stepTimeMs"] > 0
    report = json.loads(Path(result["reportPath"]).read_text())
    assert result["summary"]["bottleneck"] == report["bottleneck"]["kind"]

    # $/progress: begin, reports, end on one server-created token
    [(token, events)] = list(client.progress_reports.items())
    assert events[0].kind == "begin" and events[0].cancellable and events[-1].kind == "end"
    assert any(e.kind == "report" for e in events)
    # the CLI's --progress json events come through as messages with percentages
    recorded = [e for e in events if e.kind == "report" and (e.message or "").startswith("recording step")]
    assert recorded and recorded[-1].percentage == 100

    await wait_for(lambda: client.profile_reports, what="profileReport notification")
    assert client.profile_reports[0].reportPath == result["reportPath"]
    # hotLines: the hot lines the editor marks, in the document's own numbering
    hot_lines = {(h["uri"], h["line"]) for h in result["hotLines"]}
    assert hot_lines == {(uri, h["line"]) for h in report["hotspots"][:10] if Path(h["path"]) == script}
    assert all(0 < h["share"] <= 1 and h["msPerStep"] >= 0 and h["category"] and "ms/step" in h["label"] for h in result["hotLines"])

    # inlay hints on the hot lines of the report, in the script's own numbering
    hot = [h for h in report["hotspots"][:10] if Path(h["path"]) == script]
    got = await hints(client, uri)
    assert sorted(h.position.line + 1 for h in got) == sorted(h["line"] for h in hot)
    top = max(hot, key=lambda h: h["share"])
    label = next(h.label for h in got if h.position.line + 1 == top["line"])
    assert f"{top['share']:.0%}" in label and "ms/step" in label

    # Information diagnostics: top hot lines plus the verdict on the loop header (line 12)
    diagnostics = await wait_for(lambda: profile_diagnostics(client, uri), what="profile diagnostics")
    assert all(d.severity == types.DiagnosticSeverity.Information for d in diagnostics)
    verdict = [d for d in diagnostics if d.message.startswith("profile verdict")]
    assert [d.range.start.line for d in verdict] == [11]

    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc(uri)))
    titles = [lens.command.title for lens in lenses]
    assert titles[0] == "▶ Profile this script" and titles[1].startswith("Last profile: ")
    assert lenses[1].command.command == "torchtriage.showReport"

    # Two lines inserted at the top move every hint down by two; editing the top hot line removes its hint.
    edit(client, uri, 2, (0, 0), (0, 0), "# a\n# b\n")
    moved = await hints(client, uri)
    assert sorted(h.position.line for h in moved) == sorted(h.position.line + 2 for h in got)
    line = top["line"] + 2 - 1
    edit(client, uri, 3, (line, 0), (line, 0), "    ")
    assert top["line"] + 2 - 1 not in [h.position.line for h in await hints(client, uri)]

    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.clearProfile", arguments=[uri])
    )
    assert await hints(client, uri) == []
    await wait_for(lambda: not profile_diagnostics(client, uri), what="profile diagnostics cleared")


async def test_unsaved_edits_are_said_and_hints_land_on_the_matching_lines(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "tiny_train.py"
    shutil.copy(DATA / "tiny_train.py", script)
    uri = script.as_uri()
    open_text(client, uri, "# two unsaved\n# lines on top\n" + script.read_text())  # the buffer, not saved
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri])
    )
    assert any("unsaved edits are not in this run" in m.message for m in client.messages)
    report = json.loads(Path(result["reportPath"]).read_text())
    hot = [h["line"] for h in report["hotspots"][:10] if Path(h["path"]) == script]
    got = await hints(client, uri)
    assert hot and sorted(h.position.line + 1 for h in got) == sorted(line + 2 for line in hot)


async def test_cancel_kills_the_run(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "slow_train.py"
    shutil.copy(DATA / "slow_train.py", script)
    uri = script.as_uri()
    open_text(client, uri, script.read_text())
    request = asyncio.ensure_future(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri]))
    )
    pid_file = Path(str(script) + ".pid")
    # the script writes its pid after creating the file: wait for the digits, not just the file
    await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=60, what="the script to start")
    pid = int(pid_file.read_text())
    [token] = list(client.progress_reports)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(request, timeout=30)
    await wait_for(lambda: not alive(pid), timeout=10, what="the script process to die")
    assert client.progress_reports[token][-1].kind == "end"


async def test_cancel_request_kills_the_run(client: LanguageClient, tmp_path: Path):
    """$/cancelRequest for the profile request itself (what most clients send) stops the run too."""
    script = tmp_path / "slow_train.py"
    shutil.copy(DATA / "slow_train.py", script)
    uri = script.as_uri()
    open_text(client, uri, script.read_text())
    request = client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri]),
        msg_id="profile-to-cancel",
    )
    pid_file = Path(str(script) + ".pid")
    # the script writes its pid after creating the file: wait for the digits, not just the file
    await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=60, what="the script to start")
    pid = int(pid_file.read_text())
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="profile-to-cancel"))
    await wait_for(lambda: not alive(pid), timeout=15, what="the script process to die")
    [token] = list(client.progress_reports)
    await wait_for(lambda: client.progress_reports[token][-1].kind == "end", what="progress end")
    assert client.progress_reports[token][-1].message == "cancelled"
    with pytest.raises(Exception):  # answered with an error (RequestCancelled), or never answered
        await asyncio.wait_for(asyncio.wrap_future(request), timeout=5)


async def test_profile_settings_choose_steps_timeout_and_run_folder(client: LanguageClient, tmp_path: Path):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"profileSteps": 2, "profileTimeout": 300, "runFolder": "runs"})
    )
    # a workspace folder holding the script: its code is the user's (passed as --user-root), one that does not is not
    workspace, unrelated = tmp_path.parent, tmp_path / "unrelated"
    unrelated.mkdir()
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(
        added=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in (workspace, unrelated)], removed=[],
    )))
    script = tmp_path / "tiny_train.py"
    shutil.copy(DATA / "tiny_train.py", script)
    open_text(client, script.as_uri(), script.read_text())
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[script.as_uri()])
    )
    report_path = Path(result["reportPath"])
    assert report_path.is_relative_to(tmp_path / "runs")  # relative to the document's folder
    report = json.loads(report_path.read_text())
    assert report["steps_profiled"] == 2
    assert str(workspace.resolve()) in report["user_roots"] and str(unrelated.resolve()) not in report["user_roots"]


async def test_profile_this_cell_runs_the_cells_up_to_it(client: LanguageClient, tmp_path: Path):
    source = (DATA / "tiny_train.py").read_text()
    setup, loop = source.split("\nfor step", 1)
    cells = [setup, "for step" + loop, "raise RuntimeError('the cell after the profiled one must not run')\n"]
    open_notebook(client, cells)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[{"uri": NOTEBOOK, "cell": cell_uri(1)}])
    )
    ran = (Path(result["reportPath"]).parent.parent / "notebook_script.py").read_text()
    assert "for step" in ran and "must not run" not in ran
    assert {h["uri"] for h in result["hotLines"]} <= {cell_uri(0), cell_uri(1)} and result["hotLines"]
    with pytest.raises(JsonRpcException, match="no code cell"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchtriage.profile", arguments=[{"uri": NOTEBOOK, "cell": 7}])
        )
