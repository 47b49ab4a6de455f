"""End to end in a real JupyterLab, driven in headless Chromium (playwright-core): a trace recorded here with plain
torch.profiler (``with_stack``), put in the server root, opened from the file browser shows as a torchtriage report
(the verdict, the hot line in the root's script, report.html); a copy named ``*.json`` opens through "Open With →
torchtriage report"; a file that is not a trace shows the reason.  A folder holding a trace per rank opens through
the folder's context menu (only there) as the first rank's report, naming the ranks, each a link to its own report;
an empty folder shows the reason.  The trace's content never reaches the browser."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_support import needs_labextension
from lab_support import BUILT, REPO, Lab

JLAB = REPO / "extension" / "jupyterlab"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")
SCRIPT = REPO / "tests" / "data" / "runtime" / "traces" / "train_traced.py"
RANK_TRACE = REPO / "tests" / "data" / "runtime" / "cuda" / "sync_every_step_v1" / "trace.json.gz"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists() or NODE is None, reason="needs node and Debian's chromium (make system-deps)"),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch to record the trace"),
]


@pytest.fixture(autouse=True)
def built():
    needs_labextension((JLAB / "node_modules" / "playwright-core").is_dir() and (BUILT / "package.json").is_file(),
                       "needs `make labextension` (npm deps and the built labextension)")


def test_a_trace_in_the_file_browser_opens_as_a_report(tmp_path):
    root = tmp_path / "root"
    traces = root / "proj" / "traces"
    traces.mkdir(parents=True)
    shutil.copy(SCRIPT, root / "proj" / "train.py")
    trace = traces / "job.pt.trace.json"
    proc = subprocess.run([sys.executable, "train.py", "--trace", str(trace)], cwd=root / "proj", capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.copy(trace, traces / "copy.json")
    (traces / "notes.pt.trace.json").write_text('{"traceEvents": [')  # truncated
    (traces / "ranks").mkdir()
    for name in ("job_rank0.1700000000000", "job_rank1.1700000000001"):
        shutil.copy(RANK_TRACE, traces / "ranks" / f"{name}.pt.trace.json.gz")
    (traces / "empty").mkdir()
    heavy = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "return torch.mm(a, b)" in line)
    out = tmp_path / "screens"
    out.mkdir()
    lab = Lab(tmp_path / "lab", root)
    try:
        env = dict(os.environ, LAB_URL=lab.url, LAB_TOKEN=lab.token, FOLDER="proj/traces", TRACE=trace.name, PLAIN="copy.json",
                   BAD="notes.pt.trace.json", RANKS="ranks", EMPTY="empty", OUT=str(out), CHROMIUM=CHROMIUM)
        result = subprocess.run([NODE, str(JLAB / "e2e" / "trace.mjs")], env=env, capture_output=True, text=True, timeout=480)
    finally:
        lab.close()
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    seen = json.loads(lines[-1]) if lines else {}
    assert result.returncode == 0, f"{seen} (screenshots in {out}; lab log {lab.log_path}; stderr: {result.stderr[-1500:]})"
    assert seen["verdict"].startswith("compute bound") and "ms/step over 3 steps" in seen["verdict"], seen
    assert seen["hot_lines"].startswith(f"Hot lines: proj/train.py:{heavy} "), seen
    assert seen["run"].startswith("Analysed: proj/traces/.torchtriage/runs/") and seen["tab"].startswith("job.pt.trace.json"), seen
    assert "Why is" in seen["report_html"] and "of step time" in seen["report_html"], seen
    assert seen["open_with_verdict"].startswith("compute bound"), seen
    assert "cannot analyse proj/traces/notes.pt.trace.json" in seen["bad"], seen
    assert "notes.pt.trace.json" in seen["bad"].split("analyse", 1)[1], seen  # the CLI's message names the file
    fetched = [url for url in seen["contents_requests"] if "/checkpoints" not in url]  # (checkpoints: a listing)
    assert fetched and all("content=0" in url for url in fetched), seen
    assert seen["file_menu_has_folder_command"] is False, seen
    assert seen["folder_verdict"].startswith("data loading bound") and seen["folder_tab"].startswith("ranks/"), seen
    assert seen["folder_workers"].startswith("Ranks analysed: 0, 1 · all ranks (the report of rank 0)"), seen
    assert seen["folder_run"].startswith("Analysed: proj/traces/.torchtriage/runs/") and seen["folder_run"].endswith("-analyze-ranks"), seen
    assert seen["folder_html_has_ranks"] is True, seen  # the run's page: the ranks section
    assert seen["rank1_src"].endswith("-analyze-ranks/rank1") and seen["rank1_has_ranks_section"] is False, seen
    assert "cannot analyse proj/traces/empty" in seen["empty"] and "no trace files in this folder" in seen["empty"], seen
    runs = [run for run in (traces / ".torchtriage" / "runs").iterdir() if not run.name.endswith("-analyze-ranks")]
    assert len(runs) == 2 and all((run / "report.html").is_file() for run in runs), runs  # the trace, and its copy
