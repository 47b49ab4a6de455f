"""torchtriage.analyze end to end: the real server over stdio analyses a trace recorded here with plain
torch.profiler (``with_stack``) of a two-file script, and draws its hot lines on the local files.

The script runs from its own folder, so the trace names ``traced_loop.py`` / ``traced_ops.py`` relative
to it, and the trace is written elsewhere: only the workspace folder (passed as ``--source-root``) finds them.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import open_text, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torchtriage.runtime.offline") is None or importlib.util.find_spec("torch") is None,
        reason="needs torchtriage analyze and torch (to record the trace)",
    ),
]

EVERYTHING = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1000, character=0))
HEAVY = "return torch.mm(a, b)"
LOOP_HEADER = "for step in range(6):"

OPS = '''import torch


def heavy(a, b):
    return torch.mm(a, b)
'''

LOOP = '''import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from traced_ops import heavy


def main(out):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3), with_stack=True,
                 on_trace_ready=lambda prof: prof.export_chrome_trace(out)) as prof:
        for step in range(6):
            x = torch.randn(8, 64)
            loss = model(x).square().mean() + heavy(a, b).mean() * 0
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()


main(sys.argv[1])
'''


def line_of(text: str, source: str) -> int:
    [line] = [n for n, row in enumerate(source.splitlines(), 1) if text in row]
    return line


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the workspace folder holding the script, the trace recorded of it in another folder)."""
    base = tmp_path_factory.mktemp("analyze")
    workspace, traces = base / "workspace", base / "traces"
    workspace.mkdir()
    traces.mkdir()
    (workspace / "traced_ops.py").write_text(OPS)
    (workspace / "traced_loop.py").write_text(LOOP)
    trace = traces / "job.pt.trace.json"
    proc = subprocess.run([sys.executable, "traced_loop.py", str(trace)], cwd=workspace, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and trace.is_file(), proc.stdout + proc.stderr
    return workspace, trace


def add_folder(client: LanguageClient, folder: Path) -> None:
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(
        added=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)], removed=[],
    )))


async def analyze(client: LanguageClient, argument: Any) -> Any:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.analyze", arguments=[argument]))


async def hints(client: LanguageClient, uri: str) -> list[types.InlayHint]:
    params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri=uri), range=EVERYTHING)
    return await client.text_document_inlay_hint_async(params) or []


def profile_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, ()) if d.source == "torchtriage-profile"]


async def test_analyze_draws_the_trace_on_the_local_files(client: LanguageClient, recorded: tuple[Path, Path]):
    workspace, trace = recorded
    add_folder(client, workspace)
    loop, ops = workspace / "traced_loop.py", workspace / "traced_ops.py"
    loop_uri, ops_uri = loop.as_uri(), ops.as_uri()
    open_text(client, loop_uri, LOOP)

    result = await analyze(client, str(trace))
    report = json.loads(Path(result["reportPath"]).read_text())
    assert result["fromTrace"] is True and result["tracePath"] == str(trace.resolve())
    assert report["source"]["kind"] == "trace" and report["source"]["path"] == str(trace.resolve())
    assert result["summary"]["bottleneck"] == report["bottleneck"]["kind"] == "compute"
    assert result["summary"]["stepTimeMs"] > 0 and result["htmlPath"] and Path(result["htmlPath"]).is_file()

    # the hottest line is heavy()'s matmul, in traced_ops.py (not open): found under the workspace folder
    top = result["hotLines"][0]
    assert (top["uri"], top["line"], top["category"]) == (ops_uri, line_of(HEAVY, OPS), "compute")
    assert result["uri"] == ops_uri and set(result["files"]) >= {ops_uri, loop_uri}
    assert report["hotspots"][0]["path"] == str(ops.resolve())

    # progress: begin ... end on a server-created token, with the CLI's stage lines as messages
    [(token, events)] = list(client.progress_reports.items())
    assert events[0].kind == "begin" and events[0].cancellable and events[-1].kind == "end"
    assert any("attributing" in (e.message or "") for e in events if e.kind == "report")
    await wait_for(lambda: client.profile_reports, what="profileReport notification")
    assert client.profile_reports[0].fromTrace is True

    # the open script: its hot lines as inlay hints, the verdict on its step loop, the last-profile lens
    loop_lines = {h["line"] for h in result["hotLines"] if h["uri"] == loop_uri}
    assert line_of("loss = model(x)", LOOP) in loop_lines
    assert {h.position.line + 1 for h in await hints(client, loop_uri)} == loop_lines
    diagnostics = await wait_for(lambda: profile_diagnostics(client, loop_uri), what="profile diagnostics")
    verdict = [d for d in diagnostics if d.message.startswith("profile verdict")]
    assert [d.range.start.line + 1 for d in verdict] == [line_of(LOOP_HEADER, LOOP)] and "compute bound" in verdict[0].message
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=loop_uri)))
    assert [lens.command.title.split(":")[0] for lens in lenses] == ["▶ Profile this script", "Last profile"]
    assert list(lenses[1].command.arguments or ()) == [result["reportPath"]]

    # traced_ops.py, opened afterwards: the hot line's hint lands on the matmul's exact line
    open_text(client, ops_uri, OPS)
    got = await hints(client, ops_uri)
    assert sorted(h.position.line + 1 for h in got) == sorted(h["line"] for h in result["hotLines"] if h["uri"] == ops_uri)
    label = next(h.label for h in got if h.position.line + 1 == line_of(HEAVY, OPS))
    assert isinstance(label, str) and f"{top['share']:.0%}" in label and "ms/step" in label and "compute" in label
    diagnostics = await wait_for(lambda: profile_diagnostics(client, ops_uri), what="profile diagnostics on traced_ops.py")
    assert line_of(HEAVY, OPS) - 1 in [d.range.start.line for d in diagnostics if d.message.startswith("profile")]

    # clearing one file's profile: gone there, and it does not come back when the file is reopened
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.clearProfile", arguments=[ops_uri]))
    assert await hints(client, ops_uri) == []
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=ops_uri)))
    open_text(client, ops_uri, OPS)
    assert await hints(client, ops_uri) == []
    assert await hints(client, loop_uri)  # the other file keeps its lines


async def test_unsaved_lines_move_the_hints_and_a_uri_argument_works(client: LanguageClient, recorded: tuple[Path, Path]):
    workspace, trace = recorded
    add_folder(client, workspace)
    ops_uri = (workspace / "traced_ops.py").as_uri()
    open_text(client, ops_uri, "# two unsaved\n# lines on top\n" + OPS)
    result = await analyze(client, {"path": trace.as_uri()})
    report = json.loads(Path(result["reportPath"]).read_text())
    on_disk = {h["line"] for h in report["hotspots"][:10] if h["path"] == str((workspace / "traced_ops.py").resolve())}
    assert line_of(HEAVY, OPS) in on_disk
    assert {h.position.line + 1 for h in await hints(client, ops_uri)} == {line + 2 for line in on_disk}
    assert {h["line"] for h in result["hotLines"] if h["uri"] == ops_uri} == {line + 2 for line in on_disk}


async def test_without_the_workspace_folder_no_line_is_local(client: LanguageClient, recorded: tuple[Path, Path]):
    """The trace's relative names are not under the trace's folder: the report keeps them as written and nothing is drawn."""
    _, trace = recorded
    result = await analyze(client, str(trace))
    assert result["fromTrace"] is True and result["summary"]["bottleneck"] == "compute"
    assert result["hotLines"] == [] and result["files"] == [] and result["uri"] == trace.resolve().as_uri()


async def test_bad_traces_are_refused_with_the_reason(client: LanguageClient, tmp_path: Path):
    with pytest.raises(JsonRpcException, match="no trace at"):
        await analyze(client, str(tmp_path / "missing.json"))
    with pytest.raises(JsonRpcException, match="expected the trace's path"):
        await analyze(client, {"uri": "file:///x.json"})
    corrupt = tmp_path / "corrupt.pt.trace.json.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00 not gzip at all")
    with pytest.raises(JsonRpcException, match="analyze exited with 2"):
        await analyze(client, str(corrupt))
    shown = await wait_for(lambda: [m.message for m in client.messages if "torchtriage analyze failed" in m.message], what="the error")
    assert "corrupt.pt.trace.json.gz" in shown[0]
