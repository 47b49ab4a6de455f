"""REST routes under ``<base_url>/torchtriage/``: what the labextension needs from the server.

| route | method | what |
|---|---|---|
| ``root`` | GET | the server root as a ``file://`` URI (the LSP client's rootUri) |
| ``rules`` | GET | every rule: code, name, severity, category, summary, explanation (Markdown) |
| ``runs`` | GET | run folders under the server root, newest first, with their verdicts |
| ``report?path=REL`` | GET | one run's report.json (``path``: the run folder, relative to the root) |
| ``html?path=REL`` | GET | that run's report.html (self-contained) |
| ``tensorboard`` | POST ``{"path": REL}`` | start TensorBoard on the run's logdir; ``{"url", "pid"}`` |
| ``trace`` | POST ``{"path": REL}`` | analyse a trace file or folder (``torchtriage analyze``, see ``traces.py``); ``{"run", "trace", "folder", "reused", "summary", "workers"}`` |

Every route needs jupyter-server's authentication and authorization
(resource ``torchtriage``); writes need the XSRF token; paths are relative to
the server's root and never leave it (see ``paths.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .paths import OutsideRoot, inside, run_folders
from .tensorboard import TensorBoards
from .traces import TraceFailed, TraceRuns, summary, workers

AUTH_RESOURCE = "torchtriage"


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def root(self) -> Path:
        return Path(self.settings["torchtriage_root"])

    def run_dir(self, relative: str) -> Path:
        try:
            folder = inside(self.root, relative)
        except OutsideRoot as exc:
            raise web.HTTPError(403, str(exc)) from None
        if not (folder / "report.json").is_file():
            raise web.HTTPError(404, f"no report.json in {relative}")
        return folder

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()


class RootHandler(_Base):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.finish(json.dumps({"root_uri": self.root.resolve().as_uri()}))


class RulesHandler(_Base):
    @web.authenticated
    @authorized
    def get(self) -> None:
        from ..analysis.rules import all_rules

        self.finish(json.dumps([
            {"code": r.code, "name": r.name, "severity": r.severity.value, "category": r.category,
             "requires_cuda": r.requires_cuda, "summary": r.summary, "explanation": r.explain()}
            for r in all_rules()
        ]))


class RunsHandler(_Base):
    @web.authenticated
    @authorized
    def get(self) -> None:
        runs = []
        for folder in run_folders(self.root):
            try:
                report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            runs.append(_summary(self.relative(folder), folder, report))
        runs.sort(key=lambda r: r["mtime"], reverse=True)
        self.finish(json.dumps({"runs": runs}))


class ReportHandler(_Base):
    @web.authenticated
    @authorized
    def get(self) -> None:
        folder = self.run_dir(self.get_argument("path", ""))
        self.set_header("Content-Type", "application/json")
        self.finish((folder / "report.json").read_text(encoding="utf-8"))


class ReportHtmlHandler(_Base):
    @property
    def content_security_policy(self) -> str:
        # report.html is self-contained: inline styles and SVG, no script; its own origin (sandbox), like /files.
        return super().content_security_policy + "; style-src 'unsafe-inline'; img-src data:; sandbox"

    @web.authenticated
    @authorized
    def get(self) -> None:
        folder = self.run_dir(self.get_argument("path", ""))
        page = folder / "report.html"
        if not page.is_file():
            raise web.HTTPError(404, "this run has no report.html")
        self.finish(page.read_text(encoding="utf-8"), set_content_type="text/html; charset=utf-8")  # (APIHandler: JSON)


class TensorBoardHandler(_Base):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.get_json_body() or {}
        folder = self.run_dir(str(body.get("path", "")))
        logdir = folder / "tb"
        if not logdir.is_dir():
            raise web.HTTPError(404, "this run has no TensorBoard logdir (tb/)")
        boards: TensorBoards = self.settings["torchtriage_tensorboards"]
        try:
            url, pid = await boards.start(logdir)
        except RuntimeError as exc:
            raise web.HTTPError(500, str(exc)) from None
        self.finish(json.dumps({"url": url, "pid": pid, "logdir": self.relative(logdir)}))


class TraceHandler(_Base):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.get_json_body() or {}
        relative = str(body.get("path", ""))
        try:
            trace = inside(self.root, relative)
        except OutsideRoot as exc:
            raise web.HTTPError(403, str(exc)) from None
        if not (trace.is_file() or trace.is_dir()):
            raise web.HTTPError(404, f"no trace file or folder {relative}")
        runs: TraceRuns = self.settings["torchtriage_traces"]
        try:
            folder, reused = await runs.run_for(trace, self.root)
        except TraceFailed as exc:
            raise web.HTTPError(422, str(exc)) from None
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        self.finish(json.dumps({"run": self.relative(folder), "trace": self.relative(trace), "folder": trace.is_dir(),
                                "reused": reused, "summary": summary(report, self.root),
                                "workers": workers(folder, report, self.root) if trace.is_dir() else []}))


def _summary(relative: str, folder: Path, report: dict[str, Any]) -> dict[str, Any]:
    bottleneck = report.get("bottleneck") or {}
    return {
        "path": relative,
        "script": report.get("script"),
        "status": (report.get("status") or {}).get("status"),
        "bottleneck": bottleneck.get("kind"),
        "share": bottleneck.get("share"),
        "step_time_ms": report.get("step_time_ms"),
        "steps_profiled": report.get("steps_profiled"),
        "mtime": (folder / "report.json").stat().st_mtime,
    }


ROUTES = [("root", RootHandler), ("rules", RulesHandler), ("runs", RunsHandler), ("report", ReportHandler),
          ("html", ReportHtmlHandler), ("tensorboard", TensorBoardHandler), ("trace", TraceHandler)]


def setup_handlers(server_app: Any) -> list[tuple[str, Any]]:
    """Register the routes on the server's web app; returns them (the tests walk every one)."""
    web_app = server_app.web_app
    root = getattr(server_app, "root_dir", None) or server_app.contents_manager.root_dir
    boards = TensorBoards()
    web_app.settings["torchtriage_root"] = str(Path(root).expanduser().resolve())
    web_app.settings["torchtriage_tensorboards"] = boards
    web_app.settings["torchtriage_traces"] = TraceRuns()
    base = web_app.settings["base_url"]
    handlers = [(url_path_join(base, "torchtriage", name), handler) for name, handler in ROUTES]
    web_app.add_handlers(".*$", handlers)
    import atexit

    atexit.register(boards.stop_all)
    return handlers
