"""``torchtriage compare`` on traces: a before/after pair of one loader-bound job recorded here with plain torch.profiler
(``num_workers=0``, then 4), given as a trace file and a tensorboard_trace_handler folder; each is analysed first, and the
comparison has the statistics of run comparison (a bootstrap interval over each run's steps)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from torchtriage.cli import main as cli_main
from torchtriage.runtime.compare.document import load_schema
from trace_recording import SCRIPT, check_schema, record

pytestmark = pytest.mark.slow
SLEEP = "0.03"  # per sample, 8 a batch: ~240 ms of loading a step with no workers
# Four workers (not two): two alternate, so the three recorded steps waited ~210, ~0 and ~210 ms, and on a loaded
# machine a bootstrap over three such steps could not tell them from 240 ms; with four the window's steps take
# ~26, ~26 and ~150 ms against ~270.
WORKERS = "4"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("pair")
    record("--trace", str(base / "before.json"), "--loader-sleep", SLEEP)
    record("--tb", str(base / "after_log"), "--loader-sleep", SLEEP, "--workers", WORKERS)
    return base / "before.json", base / "after_log"


def test_two_traces_compare_faster_with_an_interval(pair: tuple[Path, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    before, after = pair
    out = tmp_path / "cmp"
    code = cli_main(["compare", str(before), str(after), "--out", str(out), "--source-root", str(SCRIPT.parent), "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(captured.out)
    assert json.loads((out / "after" / "compare.json").read_text()) == document
    errors = list(jsonschema.Draft202012Validator(load_schema()).iter_errors(document))
    assert not errors, [e.message for e in errors[:3]]
    for side in ("before", "after"):
        report = json.loads((out / side / "report.json").read_text())
        check_schema(report)
        assert report["source"]["kind"] == "trace" and report["steps_profiled"] == 3
        assert document[side]["run_dir"] == str(out / side)
    step = document["step_time"]
    assert step["change"] == "faster" and document["verdict"]["change"] == "faster"
    interval = step["interval"]
    assert interval["method"] == "block bootstrap" and interval["steps"] == {"before": 3, "after": 3}
    assert interval["low_ms"] <= step["delta_ms"] <= interval["high_ms"] < -step["threshold_ms"]
    assert document["noise"]["before"]["source"] == "steps" and document["noise"]["note"]  # single runs: the steps' spread
    assert document["same_script"] and "faster" in document["verdict"]["text"]
    sleep = next(row for row in document["lines"] if row["before"]["source"] == "time.sleep(self.sleep)")
    assert sleep["match"] == "same" and sleep["delta_ms"] < -200  # the workers sleep now, not the stepping thread

    # the analysed folders are run folders: compared again as such, the same statistics
    code = cli_main(["compare", str(out / "before"), str(out / "after"), "--no-write", "--format", "json"])
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and again["step_time"] == step


def test_a_trace_with_baseline_last_is_a_usage_error(pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["compare", str(pair[0]), "--baseline", "last"])
    err = capsys.readouterr().err
    assert code == 2 and "--baseline last takes a run folder, not a trace" in err
