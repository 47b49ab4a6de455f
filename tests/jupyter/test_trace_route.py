"""The ``trace`` route through a real jupyter-server: a trace recorded here with plain torch.profiler, in the
server root, analysed into a run folder beside it (reused when opened again); paths outside the root, a
missing file and a corrupt trace refused; no token, no analysis."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

pytest_plugins = ["pytest_jupyter.jupyter_server"]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "data" / "runtime" / "traces" / "train_traced.py"
NO_TOKEN = {"Authorization": ""}

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch to record the trace")


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"torchtriage.jupyter": True}}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``proj/train.py`` and ``proj/traces/job.pt.trace.json``, recorded from proj/ (so the trace names
    ``train.py``, found in the trace's parent folder)."""
    base = tmp_path_factory.mktemp("recorded")
    (base / "proj" / "traces").mkdir(parents=True)
    shutil.copy(SCRIPT, base / "proj" / "train.py")
    proc = subprocess.run([sys.executable, "train.py", "--trace", str(base / "proj" / "traces" / "job.pt.trace.json")], cwd=base / "proj",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return base


async def post(jp_fetch, body: dict, **kwargs) -> tuple[int, dict]:
    try:
        response = await jp_fetch("torchtriage", "trace", method="POST", body=json.dumps(body), request_timeout=300, **kwargs)
        return response.code, json.loads(response.body)
    except HTTPClientError as exc:
        return exc.code, json.loads(exc.response.body) if exc.response and exc.response.body else {}


@pytest.mark.slow
def test_a_trace_in_the_root_opens_as_a_report(jp_asyncio_loop, jp_fetch, jp_root_dir, recorded):
    run = jp_asyncio_loop.run_until_complete
    shutil.copytree(recorded, jp_root_dir, dirs_exist_ok=True)
    script = (jp_root_dir / "proj" / "train.py").read_text().splitlines()
    heavy = next(n for n, line in enumerate(script, 1) if "return torch.mm(a, b)" in line)

    code, reply = run(post(jp_fetch, {"path": "proj/traces/job.pt.trace.json"}))
    assert code == 200, reply
    assert reply["run"].startswith("proj/traces/.torchtriage/runs/") and reply["run"].endswith("-analyze-job") and reply["reused"] is False
    report = json.loads((jp_root_dir / reply["run"] / "report.json").read_text())
    trace = jp_root_dir / "proj" / "traces" / "job.pt.trace.json"
    assert report["source"]["kind"] == "trace" and report["source"]["path"] == str(trace.resolve())
    summary = reply["summary"]
    assert summary["bottleneck"] == report["bottleneck"]["kind"] == "compute" and summary["step_time_ms"] > 0
    assert (summary["hot_lines"][0]["path"], summary["hot_lines"][0]["line"]) == ("proj/train.py", heavy)  # found under the root

    # report.html through the existing route; the run is listed with the others
    page = run(jp_fetch("torchtriage", "html", params={"path": reply["run"]}))
    assert page.code == 200 and b"of step time" in page.body
    assert page.headers["Content-Type"].startswith("text/html")  # rendered, not shown as source
    assert "style-src 'unsafe-inline'" in page.headers["Content-Security-Policy"] and "sandbox" in page.headers["Content-Security-Policy"]
    runs = json.loads(run(jp_fetch("torchtriage", "runs")).body)["runs"]
    assert reply["run"] in [r["path"] for r in runs]

    # opened again: the same run; after the file changes, a new one
    code, again = run(post(jp_fetch, {"path": "proj/traces/job.pt.trace.json"}))
    assert code == 200 and again["run"] == reply["run"] and again["reused"] is True
    trace.write_bytes(trace.read_bytes())
    code, fresh = run(post(jp_fetch, {"path": "proj/traces/job.pt.trace.json"}))
    assert code == 200 and fresh["reused"] is False and fresh["run"] != reply["run"]


def test_bad_paths_and_traces_are_refused(jp_asyncio_loop, jp_fetch, jp_root_dir, tmp_path_factory):
    run = jp_asyncio_loop.run_until_complete
    outside = tmp_path_factory.mktemp("outside") / "secret.json"
    outside.write_text("{}")
    for bad in ("../secret.json", str(outside), "~/x.json", ""):
        code, _ = run(post(jp_fetch, {"path": bad}))
        assert code == 403, (bad, code)
    code, reply = run(post(jp_fetch, {"path": "missing.pt.trace.json"}))
    assert code == 404, reply
    (jp_root_dir / "corrupt.pt.trace.json.gz").write_bytes(b"\x1f\x8b\x08\x00 not gzip at all")
    code, reply = run(post(jp_fetch, {"path": "corrupt.pt.trace.json.gz"}))
    assert code == 422 and "corrupt.pt.trace.json.gz" in reply["message"], reply
    (jp_root_dir / "empty.json").write_text(json.dumps({"traceEvents": []}))
    code, reply = run(post(jp_fetch, {"path": "empty.json"}))
    assert code == 422 and "empty.json" in reply["message"], reply


def test_no_token_no_analysis(jp_asyncio_loop, jp_fetch, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    (jp_root_dir / "t.pt.trace.json").write_text(json.dumps({"traceEvents": []}))
    code, _ = run(post(jp_fetch, {"path": "t.pt.trace.json"}, headers=dict(NO_TOKEN)))
    assert code == 403
    assert not (jp_root_dir / ".torchtriage").exists()
