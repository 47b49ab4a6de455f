"""torchtriage.lab end to end: the real server over stdio runs a real lab of a tiny CPU training script."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, open_text, wait_for
from process_support import alive

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torchtriage.runtime.lab") is None or importlib.util.find_spec("torch") is None,
        reason="needs the lab and torch",
    ),
]

LAB_SCRIPT = Path(__file__).resolve().parent.parent / "data" / "lab" / "lab_train.py"


def record_lab_reports(client: LanguageClient) -> list[Any]:
    reports: list[Any] = []

    @client.feature("torchtriage/labReport")
    def lab_report(params: Any) -> None:
        reports.append(params)

    return reports


async def test_lab_runs_three_configurations_with_progress_and_a_report(client: LanguageClient, tmp_path: Path):
    reports = record_lab_reports(client)
    script = tmp_path / "lab_train.py"
    shutil.copy(LAB_SCRIPT, script)
    uri = script.as_uri()
    open_text(client, uri, script.read_text())
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.lab", arguments=[{"uri": uri, "steps": 4, "warmup": 2}])
    )
    assert result["uri"] == uri and result["device"] == "cpu"
    assert [row["name"] for row in result["rows"]] == ["fp32", "bf16", "bf16+compile"]
    for row in result["rows"]:
        assert row["status"] == "measured" and row["medianMs"] > 0 and row["samplesPerS"] > 0 and row["lossCheck"] in ("baseline", "ok")
    assert [row["outputDtype"] for row in result["rows"]] == ["float32", "bfloat16", "bfloat16"]
    assert result["rows"][2]["compileS"] > 0 and result["rows"][1]["speedupVsFp32"] > 0
    assert result["reading"] and result["verdict"] in ("take_both", "take_low_precision", "take_compile", "neither_helps")
    lab_path = Path(result["labPath"])
    assert lab_path.name == "lab.json" and lab_path.is_file() and Path(result["htmlPath"]).is_file()

    # $/progress on one server-created token: each configuration's warm-up and measured steps, then the reading
    [(token, events)] = list(client.progress_reports.items())
    assert events[0].kind == "begin" and events[0].cancellable and events[-1].kind == "end"
    messages = [e.message or "" for e in events if e.kind == "report"]
    for label in ("fp32 (1/3)", "bf16 (2/3)", "bf16+compile (3/3)"):
        assert any(m.startswith(f"{label}: measuring step 4/4") for m in messages), label
    percentages = [e.percentage for e in events if e.kind == "report" and e.percentage is not None]
    assert percentages == sorted(percentages) and percentages[-1] == 100
    assert events[-1].message == result["reading"][0]

    await wait_for(lambda: reports, what="labReport notification")
    assert reports[0].labPath == result["labPath"] and len(reports[0].rows) == 3


async def test_lab_refuses_bad_arguments_before_running_anything(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "lab_train.py"
    shutil.copy(LAB_SCRIPT, script)
    open_text(client, script.as_uri(), script.read_text())
    for argument, message in (({"steps": 0}, "`steps`"), ({"modes": 3}, "`modes`"), ({"repeat": True}, "`repeat`")):
        with pytest.raises(JsonRpcException, match=message):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="torchtriage.lab", arguments=[{"uri": script.as_uri(), **argument}])
            )
    with pytest.raises(JsonRpcException, match="is not open"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchtriage.lab", arguments=[(tmp_path / "other.py").as_uri()])
        )
    assert not client.progress_reports


async def test_cancelling_the_lab_kills_its_run(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "slow_train.py"
    shutil.copy(DATA / "slow_train.py", script)
    open_text(client, script.as_uri(), script.read_text())
    request = asyncio.ensure_future(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.lab", arguments=[script.as_uri()]))
    )
    pid_file = Path(str(script) + ".pid")
    await wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=60, what="the script to start")
    pid = int(pid_file.read_text())
    [token] = list(client.progress_reports)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(request, timeout=30)
    await wait_for(lambda: not alive(pid), timeout=10, what="the script process to die")
    assert client.progress_reports[token][-1].kind == "end"
