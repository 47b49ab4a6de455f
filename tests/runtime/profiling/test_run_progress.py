"""`--progress json`: machine-readable progress for editors (the language server forwards it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from run_support import DATA

SCRIPT = DATA / "chatty_train.py"


def test_json_progress_reports_each_recorded_step(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "torchtriage", "profile", "--progress", "json", "--active", "4",
         "--out", str(tmp_path / "run"), str(SCRIPT)],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"event": "progress"')]
    recording = [e for e in events if e["message"].startswith("recording step")]
    assert [e["message"] for e in recording] == [f"recording step {k}/4" for k in range(1, 5)]
    assert [e["percentage"] for e in recording] == [25, 50, 75, 100]
    percentages = [e["percentage"] for e in events]
    assert percentages == sorted(percentages)
    # after the window: each stage of the analysis is named (added fields; message and percentage as before)
    stages = [e["stage"] for e in events if "stage" in e]
    for stage in ("stopping the profiler", "exporting the trace", "attributing events to lines", "writing agent.json",
                  "attributing the recorded time to lines", "writing report.json and report.html"):
        assert stage in stages, stages
    walked = [e for e in events if e.get("stage") == "attributing events to lines"]
    assert all(0 <= e["stage_percentage"] <= 100 and e["message"].startswith("analysing: ") for e in walked)
    assert "\\r" not in done.stdout and "━" not in done.stdout  # no progress bar mixed in
