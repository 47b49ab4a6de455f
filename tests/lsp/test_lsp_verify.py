"""torchtriage.verifyFixes / torchtriage.applyVerifiedFixes end to end: the real server over stdio
runs a real ``fix --verify`` of a loader-bound script, then applies the fix that helped.

One real verification (about 20-60 s); the refusals and the choice of fix use verify.json
documents written here.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import apply_workspace_edit, open_text, replace_all, wait_for

VERIFY_SCRIPT = Path(__file__).resolve().parent.parent / "data" / "runtime" / "verify" / "loader_bound.py"
LOADER = "loader = DataLoader(SlowStorage(), batch_size=32, shuffle=True)"

needs_runtime = pytest.mark.skipif(
    importlib.util.find_spec("torchtriage.runtime.verify") is None or importlib.util.find_spec("torch") is None,
    reason="needs fix --verify and torch",
)


def record_verify_reports(client: LanguageClient) -> list[Any]:
    reports: list[Any] = []

    @client.feature("torchtriage/verifyReport")
    def verify_report(params: Any) -> None:
        reports.append(params)

    return reports


async def execute(client: LanguageClient, command: str, argument: Any) -> Any:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=[argument]))


@pytest.mark.slow
@needs_runtime
async def test_verify_measures_the_loader_fix_and_apply_writes_it(client: LanguageClient, tmp_path: Path):
    reports = record_verify_reports(client)
    script = tmp_path / "loader_bound.py"
    shutil.copy(VERIFY_SCRIPT, script)
    uri, text = script.as_uri(), script.read_text()
    open_text(client, uri, text)

    result = await execute(client, "torchtriage.verifyFixes", {"uri": uri, "repeat": 2})
    assert result["uri"] == uri and result["schema_version"] == "1.0" and result["repeat"] == 2
    verify_json = Path(result["verifyJson"])
    assert verify_json.name == "verify.json" and json.loads(verify_json.read_text())["fixes"] == result["fixes"]
    assert result["baseline"]["bottleneck"] == "data_loading" and result["baseline"]["step_time_ms"] > 0
    [fix] = [f for f in result["fixes"] if f["code"] == "TT302"]
    assert fix["status"] == "measured" and fix["change"] == "faster" and fix["helps"] and fix["speedup"] > 1.5
    assert fix["interval"]["high_ms"] < 0 and fix["interval"]["low_ms"] <= fix["interval"]["high_ms"]
    assert fix["losses"]["changed"] is False
    assert {"code": "TT302", "line": fix["line"]} in result["kept"]
    assert "num_workers=4" in fix["diff"]
    assert not list(tmp_path.glob(".loader_bound.torchtriage-verify-*"))  # the fixed copies are gone

    # $/progress on one server-created token, the CLI's progress events as its reports
    [(token, events)] = list(client.progress_reports.items())
    assert events[0].kind == "begin" and events[0].cancellable and events[-1].kind == "end"
    assert any(e.kind == "report" and e.message for e in events)
    assert "helps" in (events[-1].message or "")
    await wait_for(lambda: reports, what="verifyReport notification")
    assert reports[0].verifyJson == result["verifyJson"] and reports[0].uri == uri

    applied = await execute(client, "torchtriage.applyVerifiedFixes", {"uri": uri, "verifyJson": result["verifyJson"]})
    assert applied is True
    [request] = client.applied_edits  # type: ignore[attr-defined]
    [change] = request.edit.document_changes
    assert change.text_document.version == 1  # applies to the text verified, never to a newer one
    fixed = apply_workspace_edit(text, uri, request.edit)
    # TT302's edit (or a combination of the fixes that help, led by it: the same range, so TT302's text)
    assert "num_workers=4" in fixed and "persistent_workers" not in fixed and fixed.count("\n") == text.count("\n")
    assert LOADER not in fixed and script.read_text() == text  # the client writes it, not the server


def fake_verification(tmp_path: Path, script: Path, text: str, combined: bool = False) -> Path:
    """A verify.json for ``script`` whose TT302 and TTR302 fixes help (and a combination, when asked)."""
    from torchtriage.runtime.verify.document import unified_diff
    from torchtriage.analysis.fixes import apply_edits
    from torchtriage.findings import Edit, Span

    line = text.splitlines().index(LOADER) + 1
    start, end = LOADER.index("DataLoader(") + 1, len(LOADER) + 1

    def fix(code: str, contents: list[str], speedup: float, source: str = "static") -> dict[str, Any]:
        edits = [{"line": line, "column": start, "end_line": line, "end_column": end, "content": c} for c in contents]
        after = apply_edits(text, [Edit(Span(line, start, line, end), c) for c in contents])
        return {"code": code, "line": line, "title": code, "source": source, "applicability": "safe", "edits": edits,
                "status": "measured", "change": "faster", "speedup": speedup, "helps": True, "diff": unified_diff(script, text, after)}

    call = "DataLoader(SlowStorage(), batch_size=32, shuffle=True, {})"
    document = {
        "schema_version": "1.0", "script": str(script), "baseline": {"step_time_ms": 40.0, "status": "completed"},
        "fixes": [fix("TTR302", [call.format("num_workers=2")], 2.0, "runtime"), fix("TT302", [call.format("num_workers=4")], 4.0)],
        # a combination's edits may overlap: of two on one range the verified text took the first
        "combined": fix("TT302+TTR302", [call.format(f"num_workers={n}") for n in (8, 2)], 5.0, "combined") if combined else None,
        "kept": [{"code": "TTR302", "line": line}, {"code": "TT302", "line": line}],
    }
    path = tmp_path / "verify" / "verify.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(document))
    return path


async def test_apply_takes_the_fastest_fix_or_the_combination_that_helps(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "loader_bound.py"
    shutil.copy(VERIFY_SCRIPT, script)
    uri, text = script.as_uri(), script.read_text()
    open_text(client, uri, text)
    for combined, wanted in ((False, "num_workers=4"), (True, "num_workers=8")):
        path = fake_verification(tmp_path, script, text, combined=combined)
        assert await execute(client, "torchtriage.applyVerifiedFixes", {"uri": uri, "verifyJson": path.as_uri()}) is True
        fixed = apply_workspace_edit(text, uri, client.applied_edits[-1].edit)  # type: ignore[attr-defined]
        assert wanted in fixed and "num_workers=2" not in fixed and LOADER not in fixed


async def test_apply_refuses_when_the_text_is_not_the_text_verified(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "loader_bound.py"
    shutil.copy(VERIFY_SCRIPT, script)
    uri, text = script.as_uri(), script.read_text()
    open_text(client, uri, text)
    path = fake_verification(tmp_path, script, text)
    argument = {"uri": uri, "verifyJson": str(path)}

    replace_all(client, uri, "# a new first line\n" + text, version=2)  # unsaved edits in the editor
    assert await execute(client, "torchtriage.applyVerifiedFixes", argument) is False
    assert not client.applied_edits  # type: ignore[attr-defined]
    message = await wait_for(lambda: next(m for m in client.messages if "nothing applied" in m.message), what="refusal message")
    assert "unsaved edits" in message.message and message.type == types.MessageType.Warning

    # saved: the editor matches the disk, but the disk is no longer the script that was verified
    script.write_text("# a new first line\n" + text)
    client.messages.clear()
    assert await execute(client, "torchtriage.applyVerifiedFixes", argument) is False
    message = await wait_for(lambda: next(m for m in client.messages if "nothing applied" in m.message), what="refusal message")
    assert "changed since its fixes were verified" in message.message
    assert not client.applied_edits  # type: ignore[attr-defined]


async def test_nothing_helps_and_bad_arguments(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "loader_bound.py"
    shutil.copy(VERIFY_SCRIPT, script)
    uri, text = script.as_uri(), script.read_text()
    open_text(client, uri, text)
    path = fake_verification(tmp_path, script, text)
    document = json.loads(path.read_text())
    for fix in document["fixes"]:
        fix["helps"], fix["change"] = False, "none"
    document["kept"] = []
    path.write_text(json.dumps(document))
    assert await execute(client, "torchtriage.applyVerifiedFixes", {"uri": uri, "verifyJson": str(path)}) is False
    await wait_for(lambda: any("nothing to apply" in m.message for m in client.messages), what="nothing-helps message")

    for command, argument, match in (
        ("torchtriage.verifyFixes", {"uri": uri, "repeat": 0}, "`repeat`"),
        ("torchtriage.verifyFixes", {"uri": uri, "repeat": True}, "`repeat`"),
        ("torchtriage.verifyFixes", {"uri": (tmp_path / "other.py").as_uri()}, "is not open"),
        ("torchtriage.applyVerifiedFixes", {"uri": uri}, "`verifyJson`"),
        ("torchtriage.applyVerifiedFixes", {"uri": uri, "verifyJson": str(tmp_path / "none.json")}, "cannot read"),
    ):
        with pytest.raises(JsonRpcException, match=match):
            await execute(client, command, argument)
    assert not client.progress_reports and not client.applied_edits  # type: ignore[attr-defined]
