"""The server extension's routes through a real jupyter-server (pytest-jupyter's ``jp_fetch``)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from torchtriage.jupyter.handlers import ROUTES

pytest_plugins = ["pytest_jupyter.jupyter_server"]

REPO = Path(__file__).resolve().parents[2]
NO_TOKEN = {"Authorization": ""}


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"torchtriage.jupyter": True, "jupyter_lsp": True}}}


@pytest.fixture
def entry_points_of_this_checkout(tmp_path_factory, monkeypatch):
    """This checkout's entry points as installed metadata (the venv may hold another torchtriage)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    site = tmp_path_factory.mktemp("site")
    info = site / f"torchtriage-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torchtriage\nVersion: {project['version']}\n")
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def run_folder(root: Path, name: str, kind: str = "data_loading") -> Path:
    folder = root / "notebooks" / ".torchtriage" / "runs" / name
    folder.mkdir(parents=True)
    report = {"script": str(folder / "cell-3.py"), "status": {"status": "completed"}, "bottleneck": {"kind": kind, "share": 0.6},
              "step_time_ms": 12.5, "steps_profiled": 5}
    (folder / "report.json").write_text(json.dumps(report))
    (folder / "tb").mkdir()
    return folder


def patterns(router) -> list[str]:
    """Every URL pattern registered on the app, walking nested routers."""
    out = []
    for rule in getattr(router, "rules", []):
        regex = getattr(rule.matcher, "regex", None)
        if regex is not None:
            out.append(regex.pattern)
        out += patterns(rule.target)
    return out


async def fetch_status(jp_fetch, *parts, **kwargs) -> tuple[int, bytes]:
    try:
        response = await jp_fetch(*parts, **kwargs)
        return response.code, response.body
    except HTTPClientError as exc:
        return exc.code, exc.response.body if exc.response else b""


def test_every_route_refuses_requests_without_a_token(jp_asyncio_loop, jp_fetch, jp_serverapp):
    run = jp_asyncio_loop.run_until_complete
    registered = [p for p in patterns(jp_serverapp.web_app.default_router) if "/torchtriage/" in p]
    assert len(registered) == len(ROUTES), registered
    for name, handler in ROUTES:
        methods = [m for m in ("GET", "POST") if m.lower() in vars(handler)]
        assert methods, name
        for method, body in ((m, "{}" if m == "POST" else None) for m in methods):
            code, _ = run(fetch_status(jp_fetch, "torchtriage", name, method=method, body=body, headers=dict(NO_TOKEN)))
            assert code in (401, 403), (name, method, code)


def test_root_is_the_server_root_as_a_file_uri(jp_asyncio_loop, jp_fetch, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    assert json.loads(run(jp_fetch("torchtriage", "root")).body) == {"root_uri": jp_root_dir.resolve().as_uri()}


def test_rules_carry_their_explanation(jp_asyncio_loop, jp_fetch):
    run = jp_asyncio_loop.run_until_complete
    rules = json.loads((run(jp_fetch("torchtriage", "rules"))).body)
    tt102 = next(r for r in rules if r["code"] == "TT102")
    assert tt102["name"] and tt102["explanation"].startswith("# TT102")


def test_runs_are_listed_newest_first_and_symlinks_out_of_the_root_are_not(jp_asyncio_loop, jp_fetch, jp_root_dir, tmp_path_factory):
    run = jp_asyncio_loop.run_until_complete
    run_folder(jp_root_dir, "20260101-cell3")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "report.json").write_text(json.dumps({"bottleneck": {"kind": "compute"}}))
    (jp_root_dir / "notebooks" / ".torchtriage" / "runs" / "escape").symlink_to(outside)
    runs = json.loads((run(jp_fetch("torchtriage", "runs"))).body)["runs"]
    assert [(r["path"], r["bottleneck"], r["share"]) for r in runs] == [("notebooks/.torchtriage/runs/20260101-cell3", "data_loading", 0.6)]


def test_report_is_read_only_inside_the_root(jp_asyncio_loop, jp_fetch, jp_root_dir, tmp_path_factory):
    run = jp_asyncio_loop.run_until_complete
    run_folder(jp_root_dir, "ok")
    code, body = run(fetch_status(jp_fetch, "torchtriage", "report", params={"path": "notebooks/.torchtriage/runs/ok"}))
    assert code == 200 and json.loads(body)["bottleneck"]["kind"] == "data_loading"
    outside = tmp_path_factory.mktemp("secret")
    (outside / "report.json").write_text("{}")
    (jp_root_dir / "link-out").symlink_to(outside)
    for bad in ("../secret", str(outside), "notebooks/../../secret", "link-out", "~/x", "C:/x", "notebooks/..\\..\\x"):
        code, _ = run(fetch_status(jp_fetch, "torchtriage", "report", params={"path": bad}))
        assert code == 403, (bad, code)
    code, _ = run(fetch_status(jp_fetch, "torchtriage", "report", params={"path": "notebooks"}))
    assert code == 404
    (jp_root_dir / "notebooks/.torchtriage/runs/ok/report.html").write_text("<html><body>report</body></html>")
    code, body = run(fetch_status(jp_fetch, "torchtriage", "html", params={"path": "notebooks/.torchtriage/runs/ok"}))
    assert code == 200 and b"report" in body
    code, _ = run(fetch_status(jp_fetch, "torchtriage", "html", params={"path": "link-out"}))
    assert code == 403


def test_writes_need_the_xsrf_token(jp_asyncio_loop, jp_fetch, jp_serverapp, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    run_folder(jp_root_dir, "xsrf")
    token = jp_serverapp.identity_provider.token
    login = run(jp_fetch("api", "status", params={"token": token}, headers=dict(NO_TOKEN)))
    cookies = [c.split(";", 1)[0] for c in login.headers.get_list("Set-Cookie")]
    xsrf = next((c.split("=", 1)[1] for c in cookies if c.startswith("_xsrf=")), None)
    if xsrf is None:  # the server sets the XSRF cookie on a page load
        page = run(jp_fetch("login", headers=dict(NO_TOKEN), follow_redirects=False, raise_error=False))
        cookies += [c.split(";", 1)[0] for c in page.headers.get_list("Set-Cookie")]
        xsrf = next(c.split("=", 1)[1] for c in cookies if c.startswith("_xsrf="))
    cookie = {"Cookie": "; ".join(cookies)}
    body = json.dumps({"path": "notebooks/.torchtriage/runs/missing"})
    code, text = run(fetch_status(jp_fetch, "torchtriage", "tensorboard", method="POST", body=body, headers={**NO_TOKEN, **cookie}))
    assert code == 403 and b"_xsrf" in text, text
    code, _ = run(fetch_status(jp_fetch, "torchtriage", "tensorboard", method="POST", body=body,
                               headers={**NO_TOKEN, **cookie, "X-XSRFToken": xsrf}))
    assert code == 404  # past the XSRF check: the run does not exist
    # The cookie alone authenticates reads.
    code, _ = run(fetch_status(jp_fetch, "torchtriage", "runs", headers={**NO_TOKEN, **cookie}))
    assert code == 200


def test_language_server_spec_is_discovered_by_jupyter_lsp_beside_pylsp(jp_asyncio_loop, entry_points_of_this_checkout, jp_fetch, jp_serverapp):
    run = jp_asyncio_loop.run_until_complete
    status = json.loads((run(jp_fetch("lsp", "status"))).body)
    specs = status["specs"]
    assert "torchtriage" in specs and "pylsp" in specs, sorted(specs)
    assert specs["torchtriage"]["languages"] == ["python"]
    manager = jp_serverapp.language_server_manager
    assert manager.language_servers["torchtriage"]["argv"] == [sys.executable, "-m", "torchtriage", "lsp"]


@pytest.mark.slow
def test_tensorboard_starts_on_the_runs_logdir(jp_asyncio_loop, jp_fetch, jp_serverapp, jp_root_dir):
    run = jp_asyncio_loop.run_until_complete
    run_folder(jp_root_dir, "tb-run")
    boards = jp_serverapp.web_app.settings["torchtriage_tensorboards"]
    try:
        reply = json.loads(run(jp_fetch("torchtriage", "tensorboard", method="POST",
                                        body=json.dumps({"path": "notebooks/.torchtriage/runs/tb-run"}), request_timeout=90)).body)
        assert reply["logdir"] == "notebooks/.torchtriage/runs/tb-run/tb"
        from urllib.request import urlopen

        with urlopen(reply["url"] + "data/logdir", timeout=10) as response:
            assert json.loads(response.read())["logdir"].endswith("tb-run/tb")
    finally:
        boards.stop_all()
