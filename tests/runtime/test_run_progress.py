"""`--progress json`: machine-readable progress for editors (the language server forwards it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = """
import torch
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(40):
    loss = model(torch.randn(4, 8)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_json_progress_reports_each_recorded_step(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run(
        [sys.executable, "-m", "torchtriage", "profile", "--progress", "json", "--active", "4",
         "--out", str(tmp_path / "run"), str(script)],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"event": "progress"')]
    recording = [e for e in events if e["message"].startswith("recording step")]
    assert [e["message"] for e in recording] == [f"recording step {k}/4" for k in range(1, 5)]
    assert [e["percentage"] for e in recording] == [25, 50, 75, 100]
    percentages = [e["percentage"] for e in events]
    assert percentages == sorted(percentages)
    assert "\\r" not in done.stdout and "━" not in done.stdout  # no progress bar mixed in
