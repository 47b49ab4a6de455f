"""torchtriage.profile with `nprocPerNode` and `rank`: a real torchrun run (gloo, CPU) annotating the rank asked for."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import open_text, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]
DDP_SCRIPT = Path(__file__).resolve().parent.parent / "data" / "runtime" / "ddp_train.py"


async def test_profile_under_torchrun_annotates_the_rank_asked_for(client: LanguageClient, tmp_path: Path):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"profileSteps": 3}))
    script = tmp_path / "ddp_train.py"
    shutil.copy(DDP_SCRIPT, script)
    uri = script.as_uri()
    open_text(client, uri, script.read_text())
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchtriage.profile", arguments=[{"uri": uri, "nprocPerNode": 2, "rank": 1}])
    )
    assert result["rank"] == 1 and result["ranks"] == [0, 1]
    report = json.loads(Path(result["reportPath"]).read_text())
    own = json.loads((Path(result["reportPath"]).parent / "rank1" / "report.json").read_text())
    assert report["ranks"]["shown_rank"] == 1 and report["step_times_ms"] == own["step_times_ms"]  # rank 1's lines, not rank 0's
    assert result["hotLines"] and all(h["uri"] == uri for h in result["hotLines"])
    await wait_for(lambda: client.profile_reports)
    assert client.profile_reports[-1].rank == 1  # the notification says which rank is shown


async def test_single_process_reports_no_rank_and_bad_rank_arguments_are_refused(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "ddp_train.py"
    shutil.copy(DDP_SCRIPT, script)
    uri = script.as_uri()
    open_text(client, uri, script.read_text())
    for arguments in ({"uri": uri, "rank": 1}, {"uri": uri, "nprocPerNode": 2, "rank": 2}, {"uri": uri, "nprocPerNode": 0}):
        with pytest.raises(JsonRpcException):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.profile", arguments=[arguments]))
