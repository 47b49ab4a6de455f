"""Re-profiling in the editor: deltas on the hot-line hints, the comparison in profileReport, torchtriage.compare."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_helpers import DATA, open_text, replace_all, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torchtriage.runtime.compare") is None or importlib.util.find_spec("torch") is None,
        reason="needs the runtime bridge and torch",
    ),
]

EVERYTHING = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1000, character=0))
DELTA = re.compile(r"ms/step \((no change|[+\u2212][0-9.]+ ms)\)")


async def execute(client: LanguageClient, command: str, *arguments: object) -> dict:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=list(arguments)))


async def test_a_reprofile_is_compared_with_the_previous_profile(client: LanguageClient, tmp_path: Path) -> None:
    from torchtriage.runtime.compare import load_schema

    script = tmp_path / "tiny_train.py"
    shutil.copy(DATA / "tiny_train.py", script)
    uri = script.as_uri()
    text = script.read_text()
    open_text(client, uri, text)
    first = await execute(client, "torchtriage.profile", uri)
    assert "comparison" not in first and all(h["deltaMsPerStep"] is None for h in first["hotLines"])

    edited = "import os  # two lines above everything\nprint(os.getpid())\n" + text  # every hot line moves by two
    script.write_text(edited)
    replace_all(client, uri, edited, 2)
    second = await execute(client, "torchtriage.profile", uri)

    comparison = second["comparison"]
    document = comparison["document"]
    jsonschema.validate(document, load_schema())
    assert comparison["previousReportPath"] == first["reportPath"]
    assert Path(comparison["comparePath"]) == Path(second["reportPath"]).with_name("compare.json")
    assert comparison["verdict"] == document["verdict"]["text"]
    assert (document["before"]["report"], document["after"]["report"]) == (first["reportPath"], second["reportPath"])
    await wait_for(lambda: len(client.profile_reports) == 2, what="the second profileReport")
    assert client.profile_reports[1].comparison.verdict == comparison["verdict"]

    # The hot lines were matched across the insertion: same text, two lines further down.
    moved = [r for r in document["lines"] if r["match"] == "moved" and r["before"]["hot"] and r["after"]["hot"]]
    assert moved and all(r["after"]["line"] == r["before"]["line"] + 2 for r in moved)
    # Each hot line of the new run carries its change; the hints show it.
    by_line = {(h["line"]): h for h in second["hotLines"]}
    for row in moved:
        hot = by_line[row["after"]["line"]]
        assert hot["deltaMsPerStep"] == pytest.approx(row["delta_ms"]) and DELTA.search(hot["label"])
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri=uri), range=EVERYTHING)
    )
    assert hints and all(DELTA.search(h.label) for h in hints)
    verdicts = [d for d in client.diagnostics.get(uri, ()) if d.message.startswith("profile verdict")]
    assert verdicts and "Since the previous profile: " + comparison["verdict"] in verdicts[-1].message

    # torchtriage.compare: the document's last two profiles, and any two run folders.
    again = await execute(client, "torchtriage.compare", {"uri": uri, "baseline": "last"})
    assert again["before"]["report"] == first["reportPath"] and again["after"]["report"] == second["reportPath"]
    assert again["verdict"]["text"] == document["verdict"]["text"]
    reverse = await execute(
        client, "torchtriage.compare", {"runA": Path(second["reportPath"]).parent.as_uri(), "runB": str(Path(first["reportPath"]).parent)}
    )
    assert reverse["before"]["run_dir"] == str(Path(second["reportPath"]).parent)
    assert json.loads(Path(first["reportPath"]).with_name("compare.json").read_text()) == reverse


async def test_compare_says_what_is_wrong(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "not-a-run").mkdir()
    with pytest.raises(JsonRpcException, match="has no report.json"):
        await execute(client, "torchtriage.compare", {"runA": str(tmp_path / "not-a-run"), "runB": str(tmp_path / "not-a-run")})
    with pytest.raises(JsonRpcException, match="no such run folder"):
        await execute(client, "torchtriage.compare", {"runA": str(tmp_path / "gone"), "runB": str(tmp_path)})
    uri = (tmp_path / "never.py").as_uri()
    with pytest.raises(JsonRpcException, match="has not been profiled in this session"):
        await execute(client, "torchtriage.compare", {"uri": uri, "baseline": "last"})
    with pytest.raises(JsonRpcException, match="expected"):
        await execute(client, "torchtriage.compare", "not an object")
