"""Runtime findings in the editor: after torchtriage.profile, each one is a diagnostic on its line."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_helpers import open_text, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

ATTENTION = Path(__file__).resolve().parent.parent / "data" / "runtime" / "attention_train.py"


async def test_hand_written_attention_gets_its_runtime_cost_on_its_line(client: LanguageClient, tmp_path: Path) -> None:
    script = tmp_path / "attention_train.py"
    shutil.copy(ATTENTION, script)
    uri = script.as_uri()
    text = script.read_text()
    open_text(client, uri, text)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"profileSteps": 2}))
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="torchtriage.profile", arguments=[uri]))
    report = json.loads(Path(result["reportPath"]).read_text())
    [finding] = [f for f in report["runtime_findings"] if f["code"] == "TTR603"]

    def ttr603() -> list[types.Diagnostic]:
        return [d for d in client.diagnostics.get(uri, ()) if d.source == "torchtriage-profile" and d.code == "TTR603"]

    [diagnostic] = await wait_for(ttr603, timeout=30, what="the TTR603 diagnostic")
    scores = next(n for n, line in enumerate(text.splitlines(), 1) if "scores = q @ k" in line)
    assert finding["line"] == scores and diagnostic.range.start.line == scores - 1
    assert diagnostic.message.startswith("TTR603: hand-written attention (TT508")
    assert "Try: Compute it with F.scaled_dot_product_attention" in diagnostic.message
    assert diagnostic.severity == types.DiagnosticSeverity.Information
