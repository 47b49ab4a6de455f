"""``torchtriage analyze`` on CPU traces recorded here with plain torch.profiler, against ``torchtriage profile``
on the same script: steps, the hot line, the verdict, a loader-bound loop, a trace without stacks, a logdir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from run_support import profile_cli
from torchtriage.cli import main as cli_main
from torchtriage.runtime.offline.analyze import analyze_trace
from torchtriage.runtime.offline.raw import NO_STACK
from trace_recording import SCRIPT, check_schema, line_of, record

pytestmark = pytest.mark.slow
LOADER_SLEEP = "0.03"  # per sample, 8 a batch: ~240 ms of loading a step against a ~50-100 ms matmul


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """compute: export_chrome_trace with stacks; bare: the same without with_stack; loader: a
    tensorboard_trace_handler logdir (gzip) of the loader-bound loop."""
    base = tmp_path_factory.mktemp("traces")
    record("--trace", str(base / "compute.json"))
    record("--trace", str(base / "bare.json"), "--no-stack")
    record("--tb", str(base / "loader_logdir"), "--loader-sleep", LOADER_SLEEP)
    return {"compute": base / "compute.json", "bare": base / "bare.json", "loader": base / "loader_logdir"}


def analyzed(trace: Path, out: Path, roots: tuple[Path, ...] = (SCRIPT.parent,)) -> dict[str, Any]:
    run = analyze_trace(trace, out_dir=out, roots=roots)
    assert run.report is not None, run.profile.warnings
    check_schema(run.report)
    return run.report


def test_steps_and_the_exact_hot_line(traces: dict[str, Path], tmp_path: Path) -> None:
    report = analyzed(traces["compute"], tmp_path / "run")
    assert report["steps_profiled"] == 3 and report["step_detection"] == "profiler_step"
    assert len(report["step_times_ms"]) == 3 and all(t > 0 for t in report["step_times_ms"])
    top = report["hotspots"][0]
    assert (top["path"], top["line"], top["category"]) == (str(SCRIPT), line_of("return torch.mm(a, b)"), "compute")
    assert top["source"] == "return torch.mm(a, b)"
    assert top["top_names"][0] == "aten::mm"
    # a module call, placed by the name the module was assigned to; the operator table names the line each op's
    # time went to most (a hotspot's top five names can lose the small forward addmm to backward ops in noise)
    forward = {o["line"] for o in report["operators"] if o["name"] == "aten::addmm"}
    assert forward == {line_of("out = model(x)")}, report["operators"]
    assert any(h["line"] == line_of("out = model(x)") and h["category"] == "compute" for h in report["hotspots"])
    optimizer = {h["line"] for h in report["hotspots"] if h["category"] == "optimizer"}
    assert line_of("opt.step()") in optimizer and line_of("prof.step()") not in optimizer
    assert not [w for w in report["warnings"] if "def line" in w], report["warnings"]
    assert report["source"]["kind"] == "trace" and report["source"]["path"] == str(traces["compute"].resolve())
    assert report["source"]["python_frames"] is True and "gpu_busy" not in report
    assert report["trace"]["chrome_traces"] == [str(traces["compute"].resolve())]


def test_without_the_source_lines_are_function_level(traces: dict[str, Path], tmp_path: Path) -> None:
    """The trace names ``train_traced.py`` relative to the script's folder: elsewhere it is not found, the
    heavy op is on ``heavy``'s def line, and a warning says why."""
    report = analyzed(traces["compute"], tmp_path / "run", roots=())
    top = report["hotspots"][0]
    assert (top["path"], top["line"]) == ("train_traced.py", line_of("def heavy(a, b):"))
    assert any("not on this machine (train_traced.py)" in w for w in report["warnings"]), report["warnings"]


def test_the_verdict_matches_profile(traces: dict[str, Path], tmp_path: Path) -> None:
    report = analyzed(traces["compute"], tmp_path / "analyzed")
    proc, run = profile_cli(tmp_path, "traces/train_traced.py", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    profiled = json.loads((run / "report.json").read_text())
    assert report["bottleneck"]["kind"] == profiled["bottleneck"]["kind"] == "compute"
    assert profiled["hotspots"][0]["line"] == report["hotspots"][0]["line"] == line_of("return torch.mm(a, b)")


def test_a_loader_bound_logdir_gives_data_loading(traces: dict[str, Path], tmp_path: Path) -> None:
    files = list(traces["loader"].glob("*.pt.trace.json.gz"))
    assert len(files) == 1, files
    report = analyzed(traces["loader"], tmp_path / "analyzed")
    assert report["source"]["path"] == str(files[0].resolve())
    assert report["steps_profiled"] == 3
    assert report["bottleneck"]["kind"] == "data_loading"
    loading = [h for h in report["hotspots"] if h["category"] == "data_loading"]
    assert loading[0]["line"] == line_of("time.sleep(self.sleep)")
    proc, run = profile_cli(tmp_path, "traces/train_traced.py", "--loader-sleep", LOADER_SLEEP, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((run / "report.json").read_text())["bottleneck"]["kind"] == "data_loading"


def test_without_stacks_the_breakdown_and_verdict_stay(traces: dict[str, Path], tmp_path: Path) -> None:
    report = analyzed(traces["bare"], tmp_path / "run")
    assert report["hotspots"] == [] and report["source"]["python_frames"] is False
    assert NO_STACK in report["warnings"]
    assert report["bottleneck"]["kind"] == "compute" and report["steps_profiled"] == 3
    assert report["breakdown"]["compute"] > 0.4
    assert sum(report["breakdown"].values()) == pytest.approx(1.0, abs=1e-3)


def test_the_cli_prints_report_json(traces: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = cli_main(["analyze", str(traces["compute"]), "--out", str(out), "--format", "json",
                     "--source-root", str(SCRIPT.parent)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    printed = json.loads(captured.out)
    assert printed == json.loads((out / "report.json").read_text())
    assert (out / "report.html").is_file() and (out / "profile.json").is_file()
    code = cli_main(["analyze", str(traces["compute"]), "--out", str(tmp_path / "text"), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0 and "Bottleneck: compute" in captured.out and "Traceback" not in captured.err
