"""``torchtriage analyze`` on input it cannot use: one line on stderr, ``torchtriage: error: ...``, exit code 2 and no
traceback; a trace it can partly use (no steps): a report whose warnings say what was done instead."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from torchtriage.cli import main as cli_main
from torchtriage.runtime.offline.steps import WHOLE_TRACE
from trace_recording import CUDA, check_schema

TRACE = CUDA / "sync_every_step_v1" / "trace.json.gz"  # a real trace (H100, torch 2.11) to damage


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli_main(["analyze", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def failed_with(capsys: pytest.CaptureFixture[str], path: Path, tmp_path: Path) -> str:
    code, out, err = run_cli(capsys, str(path), "--out", str(tmp_path / "run"), "--quiet")
    assert code == 2, (out, err)
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchtriage: error: "), err
    assert not (tmp_path / "run").exists()
    return lines[0]


def test_a_truncated_gzip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = TRACE.read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert "the gzip stream ends early: the file is cut off" in failed_with(capsys, cut, tmp_path)


def test_a_truncated_plain_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = gzip.decompress(TRACE.read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 3])
    assert "the JSON ends early" in failed_with(capsys, cut, tmp_path)


def test_corrupt_gzip_data(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = bytearray(TRACE.read_bytes())
    data[100:400] = bytes(300)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(bytes(data))
    assert "corrupt gzip data" in failed_with(capsys, bad, tmp_path)


@pytest.mark.parametrize(("text", "says"), [
    ("{}", "has no traceEvents list"),
    ('{"traceEvents": []}', "holds no events torch.profiler records"),
    ('{"traceEvents": {"a": 1}}', "traceEvents is not a list"),
    ("<html>not a trace</html>", "not valid JSON at character 0"),
    ('{"traceEvents": [{"ph": "X", "cat" "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}',
     "not valid JSON at character 35 (expecting ':' delimiter)"),
    ("", "the file is empty"),
])
def test_not_a_trace(text: str, says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(text)
    assert says in failed_with(capsys, path, tmp_path)


def test_missing_paths_and_empty_folders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "no such file or folder" in failed_with(capsys, tmp_path / "nothing.json", tmp_path)
    (tmp_path / "empty").mkdir()
    assert "no trace files in this folder" in failed_with(capsys, tmp_path / "empty", tmp_path)


def test_a_trace_without_steps_is_one_step(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same real trace without its ProfilerStep ranges (as recorded without a schedule): the stepping
    thread's span is one step, the report says so, and there is no deviceProperties to name the GPU."""
    data = json.loads(gzip.decompress(TRACE.read_bytes()))
    data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    del data["deviceProperties"]
    path = tmp_path / "nosteps.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "run"
    code, stdout, err = run_cli(capsys, str(path), "--out", str(out), "--format", "json")
    assert code == 0, err
    report = json.loads(stdout)
    check_schema(report)
    assert report["steps_profiled"] == 1 and report["step_detection"] == "whole_trace"
    assert WHOLE_TRACE in report["warnings"] and f"warning: {WHOLE_TRACE}" in err
    assert any("no deviceProperties" in w for w in report["warnings"])
    assert report["device"] == "cuda" and report["device_name"] == ""
    assert report["bottleneck"]["kind"] != "" and report["breakdown"]
