"""The ``trace`` route with a folder, through a real jupyter-server: a folder holding a real trace as two ranks opens
as the run folder's report with the ranks section and each rank's own run (served by the ``html`` route), beside the
folder, reused until a trace in it changes (or one is added), apart from the runs of its own files; an empty folder is
a one-line message; folders outside the root (by path or through a symlink) are refused."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

pytest_plugins = ["pytest_jupyter.jupyter_server"]

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "runtime" / "cuda" / "sync_every_step_v1" / "trace.json.gz"
RANKS = ("job_rank0.1700000000000", "job_rank1.1700000000001")


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"torchtriage.jupyter": True}}}


def ranked_folder(folder: Path) -> Path:
    """``folder`` holding the recorded trace twice, named as ranks 0 and 1 of one job (as tensorboard_trace_handler names them)."""
    folder.mkdir(parents=True)
    for name in RANKS:
        shutil.copy(TRACE, folder / f"{name}.pt.trace.json.gz")
    return folder


async def post(jp_fetch, body: dict) -> tuple[int, dict]:
    try:
        response = await jp_fetch("torchtriage", "trace", method="POST", body=json.dumps(body), request_timeout=300)
        return response.code, json.loads(response.body)
    except HTTPClientError as exc:
        return exc.code, json.loads(exc.response.body) if exc.response and exc.response.body else {}


def test_a_folder_of_ranks_opens_as_one_report(jp_asyncio_loop, jp_fetch, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    logs = ranked_folder(jp_root_dir / "proj" / "logs")

    code, reply = run(post(jp_fetch, {"path": "proj/logs"}))
    assert code == 200, reply
    assert reply["folder"] is True and reply["trace"] == "proj/logs" and reply["reused"] is False
    assert reply["run"].startswith("proj/.torchtriage/runs/") and reply["run"].endswith("-analyze-logs"), reply  # beside the folder
    assert reply["summary"]["ranks"] == [0, 1] and reply["summary"]["shown_rank"] == 0, reply["summary"]
    assert reply["summary"]["step_time_ms"] > 0
    assert [(w["rank"], w["run"]) for w in reply["workers"]] == [(0, reply["run"] + "/rank0"), (1, reply["run"] + "/rank1")]
    report = json.loads((jp_root_dir / reply["run"] / "report.json").read_text())
    assert report["ranks"]["covered"] == [0, 1] and report["source"]["rank"] == 0
    assert not list(logs.rglob("report.json"))  # nothing written into the folder of traces

    # the run's page (with its ranks section) and each rank's own page, through the html route
    page = run(jp_fetch("torchtriage", "html", params={"path": reply["run"]}))
    assert page.code == 200 and b"Ranks (2 in the traces" in page.body
    for worker in reply["workers"]:
        own = run(jp_fetch("torchtriage", "html", params={"path": worker["run"]}))
        assert own.code == 200 and b"of step time" in own.body

    # opened again: the same run; once a trace in it changes, a new one
    code, again = run(post(jp_fetch, {"path": "proj/logs"}))
    assert code == 200 and again["reused"] is True and again["run"] == reply["run"], again
    later = time.time() + 5
    os.utime(logs / f"{RANKS[1]}.pt.trace.json.gz", (later, later))
    code, fresh = run(post(jp_fetch, {"path": "proj/logs/"}))
    assert code == 200 and fresh["reused"] is False and fresh["run"] != reply["run"], fresh


def test_a_file_in_an_opened_folder_is_its_own_run(jp_asyncio_loop, jp_fetch, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    ranked_folder(jp_root_dir / "logs")
    code, folder = run(post(jp_fetch, {"path": "logs"}))
    assert code == 200 and folder["run"].startswith(".torchtriage/runs/"), folder
    code, file = run(post(jp_fetch, {"path": f"logs/{RANKS[0]}.pt.trace.json.gz"}))
    assert code == 200 and file["folder"] is False and file["workers"] == [], file
    assert file["reused"] is False and file["run"].startswith("logs/.torchtriage/runs/"), file  # not the folder's run
    code, again = run(post(jp_fetch, {"path": "logs"}))
    assert code == 200 and again["reused"] is True and again["run"] == folder["run"], again
    # a trace added with an old time (copied with its mtime) is a change all the same
    shutil.copy2(TRACE, jp_root_dir / "logs" / "job_rank2.1700000000002.pt.trace.json.gz")
    code, fresh = run(post(jp_fetch, {"path": "logs"}))
    assert code == 200 and fresh["reused"] is False and fresh["summary"]["ranks"] == [0, 1, 2], fresh


def test_an_empty_folder_is_a_one_line_message(jp_asyncio_loop, jp_fetch, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    (jp_root_dir / "proj" / "empty").mkdir(parents=True)
    (jp_root_dir / "proj" / "empty" / "notes.txt").write_text("no traces here")
    code, reply = run(post(jp_fetch, {"path": "proj/empty"}))
    assert code == 422, reply
    assert reply["message"] == "proj/empty: no trace files in this folder (*.pt.trace.json, *.json or *.json.gz)", reply
    assert not (jp_root_dir / "proj" / ".torchtriage").exists()


def test_folders_outside_the_root_are_refused(jp_asyncio_loop, jp_fetch, jp_root_dir, tmp_path_factory):
    run = jp_asyncio_loop.run_until_complete
    outside = ranked_folder(tmp_path_factory.mktemp("outside") / "logs")
    (jp_root_dir / "linked").symlink_to(outside, target_is_directory=True)
    for bad in (str(outside), "../logs", "proj/../../logs", "linked", "linked/", "~"):
        code, reply = run(post(jp_fetch, {"path": bad}))
        assert code == 403, (bad, code, reply)
    assert not (outside.parent / ".torchtriage").exists() and not (jp_root_dir / ".torchtriage").exists()
    code, reply = run(post(jp_fetch, {"path": "missing/folder"}))
    assert code == 404, reply
