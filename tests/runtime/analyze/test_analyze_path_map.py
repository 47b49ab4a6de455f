"""``torchtriage analyze --path-map FROM=TO``: a trace recorded in ``/workspace/proj`` (its frames' file names rewritten so)
read beside a checkout elsewhere: without the map the file is not found and calls sit on def lines, with it the exact
hot line is in the local file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from torchtriage.cli import main as cli_main
from trace_recording import SCRIPT, check_schema, line_of, record

pytestmark = pytest.mark.slow
REMOTE = "/workspace/proj"


@pytest.fixture(scope="module")
def remote_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compute loop's trace (with stacks), as if recorded by ``python /workspace/proj/train_traced.py``."""
    base = tmp_path_factory.mktemp("remote")
    record("--trace", str(base / "local.json"))
    data = json.loads((base / "local.json").read_text(encoding="utf-8"))
    renamed = 0
    for event in data["traceEvents"]:
        if event.get("cat") == "python_function" and str(event.get("name", "")).startswith(SCRIPT.name + "("):
            event["name"] = f"{REMOTE}/{event['name']}"
            renamed += 1
    assert renamed > 5
    (base / "trace.json").write_text(json.dumps(data), encoding="utf-8")
    return base / "trace.json"


def analyze(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = cli_main(["analyze", *args, "--format", "json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else {}), captured.err


def test_the_map_finds_the_exact_line_in_the_checkout(remote_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(SCRIPT, checkout / SCRIPT.name)
    remote_file = f"{REMOTE}/{SCRIPT.name}"

    code, report, err = analyze(capsys, str(remote_trace), "--out", str(tmp_path / "unmapped"))
    assert code == 0, err
    top = report["hotspots"][0]
    assert (top["path"], top["line"]) == (remote_file, line_of("def heavy(a, b):"))
    assert any(f"not on this machine ({remote_file})" in w and "def line" in w for w in report["warnings"]), report["warnings"]

    code, report, err = analyze(capsys, str(remote_trace), "--out", str(tmp_path / "mapped"), "--path-map", f"{REMOTE}={checkout}")
    assert code == 0, err
    check_schema(report)
    local = str((checkout / SCRIPT.name).resolve())
    top = report["hotspots"][0]
    assert (top["path"], top["line"], top["source"]) == (local, line_of("return torch.mm(a, b)"), "return torch.mm(a, b)")
    assert {h["path"] for h in report["hotspots"]} == {local}
    assert local in {s["path"] for s in report["sources"]} and report["script"] == local
    assert not [w for w in report["warnings"] if "def line" in w], report["warnings"]


def test_the_longest_prefix_wins_and_a_bad_map_is_a_usage_error(
        remote_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    right, wrong = tmp_path / "right", tmp_path / "wrong"
    right.mkdir()
    wrong.mkdir()
    shutil.copy(SCRIPT, right / SCRIPT.name)
    code, report, err = analyze(capsys, str(remote_trace), "--out", str(tmp_path / "run"),
                                "--path-map", f"/workspace={wrong}", "--path-map", f"{REMOTE}/={right}")
    assert code == 0, err
    assert report["hotspots"][0]["path"] == str((right / SCRIPT.name).resolve())
    code, _, err = analyze(capsys, str(remote_trace), "--out", str(tmp_path / "bad"), "--path-map", REMOTE)
    assert code == 2 and "--path-map '/workspace/proj': expected FROM=TO" in err and "Traceback" not in err
