"""``workspace/executeCommand``: profile a script, clear or show its profile, fix all.

``torchtriage.lab [uri | {uri, modes, steps, warmup, repeat}]`` runs ``python -m torchtriage lab``
on the file the same way and returns (and notifies) the ``torchtriage/labReport`` payload.

``torchtriage.verifyFixes [{uri, repeat}]`` runs ``python -m torchtriage fix --verify`` on the saved script the
same way and returns (and notifies as ``torchtriage/verifyReport``) verify.json with ``uri`` and ``verifyJson``;
``torchtriage.applyVerifiedFixes [{uri, verifyJson}]`` applies the fixes that help via ``workspace/applyEdit``
while the editor's text is the text that was verified (see ``verify_report``).

``torchtriage.profile [uri | {uri, cell, nprocPerNode, rank}]`` runs ``python -m torchtriage profile --out DIR
[--python INTERPRETER] [--active N] [--timeout S] [--nproc-per-node N [--show-rank K]] FILE`` in its own process group (a
notebook: its code cells joined into a temporary script, up to ``cell`` when given; ``nprocPerNode``: under
torchrun, annotating rank ``rank``, default 0), reports ``$/progress`` begin/report/end from the run's output lines,
and kills the process group when the request or the progress is cancelled.
Nothing is ever run without this explicit command.

``torchtriage.analyze [path | {path}]`` runs ``python -m torchtriage analyze --out DIR [--source-root FOLDER]...
PATH`` on a trace recorded elsewhere the same way (the workspace folders as source roots), annotates the open
documents its hot lines are on (and those opened later; see ``trace_report``), and returns (and notifies) the
``torchtriage/profileReport`` payload with ``fromTrace``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from ..analysis.notebooks import build_virtual_module
from ..runtime.profiling.groups import signal_group
from .annotations import annotations_from_report, summary_from_report
from .capabilities import ClientSupport
from .client import ClientChannel
from .code_lens import step_loop_lines
from .comparison import ProfileComparisons, hot_line_deltas
from .diagnostics import DiagnosticsEngine
from .documents import DocumentState, DocumentStore, LineMap, shift_annotations
from .edits import text_edits, versioned_edit
from .fix_all import FixAll
from .lab_report import LAB_REPORT, lab_options, lab_payload
from .settings import SettingsManager
from .texts import EditorTexts
from .trace_report import TraceAnnotations, trace_argument, trace_hot_lines, trace_payload
from .verify_report import (
    VERIFY_JSON, VERIFY_REPORT, chosen_fix, effective_edits, fix_edits, load_verification, stale_reason, verify_options,
    verify_path_argument, verify_payload, verify_summary,
)

log = logging.getLogger(__name__)

PROFILE_REPORT = "torchtriage/profileReport"
KILL_GRACE_S = 10.0  # the runtime stops its script within 5 s of SIGINT


class ProfileFailed(Exception):
    """The run ended without a report.json."""


def _uri_argument(arguments: list[Any] | None) -> str:
    value = arguments[0] if arguments else None
    if isinstance(value, dict):
        value = value.get("uri")
    if not isinstance(value, str):
        raise JsonRpcInvalidParams("expected the document URI as the first argument")
    return value


def _cell_argument(arguments: list[Any] | None) -> str | int | None:
    """The ``cell`` of a ``{uri, cell}`` argument: a cell URI or a code-cell index, or None."""
    value = arguments[0] if arguments else None
    cell = value.get("cell") if isinstance(value, dict) else None
    if cell is not None and (isinstance(cell, bool) or not isinstance(cell, (str, int))):
        raise JsonRpcInvalidParams("expected `cell` to be a cell URI or a code-cell index")
    return cell


def _ranks_argument(arguments: list[Any] | None) -> tuple[int | None, int | None]:
    """``nprocPerNode`` and ``rank`` of a ``{uri, ...}`` argument (None when not given)."""
    value = arguments[0] if arguments else None
    if not isinstance(value, dict):
        return None, None
    nproc, rank = value.get("nprocPerNode"), value.get("rank")
    for name, number in (("nprocPerNode", nproc), ("rank", rank)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise JsonRpcInvalidParams(f"expected `{name}` to be a non-negative integer")
    if nproc is not None and nproc < 1:
        raise JsonRpcInvalidParams("expected `nprocPerNode` to be at least 1")
    if rank is not None and (nproc is None or rank >= nproc):
        raise JsonRpcInvalidParams(f"`rank` {rank} needs `nprocPerNode` above it (ranks 0..nprocPerNode-1)")
    return nproc, rank


def _up_to_cell(snapshot: list[tuple[str, int, str]], cell: str | int) -> list[tuple[str, int, str]]:
    """The code cells up to and including ``cell``."""
    if isinstance(cell, int):
        index = cell
    else:
        wanted = unquote(cell)
        index = next((i for i, (uri, _, _) in enumerate(snapshot) if unquote(uri) == wanted), -1)
    if not 0 <= index < len(snapshot):
        raise JsonRpcInvalidParams(f"no code cell {cell!r} in this notebook")
    return snapshot[: index + 1]


def _progress_text(line: str) -> tuple[str | None, int | None]:
    """A message and percentage from one output line (a ``--progress json`` line, see
    ``runtime/profiling/progress_json.py``, or plain text)."""
    line = line.strip()
    if not line:
        return None, None
    try:
        event = json.loads(line)
    except ValueError:
        return line[:200], None
    if not isinstance(event, dict):
        return line[:200], None
    message = event.get("message") or event.get("stage") or event.get("event")
    percentage = event.get("percentage")
    if percentage is None and isinstance(event.get("fraction"), (int, float)):
        percentage = event["fraction"] * 100
    return (str(message) if message else None), (int(percentage) if isinstance(percentage, (int, float)) else None)


class Commands:
    """The ``workspace/executeCommand`` commands, over the document state and the client channel."""

    def __init__(
        self,
        store: DocumentStore,
        engine: DiagnosticsEngine,
        settings: SettingsManager,
        texts: EditorTexts,
        client: ClientChannel,
        support: ClientSupport,
        fix_all: FixAll,
    ) -> None:
        self.store = store
        self.engine = engine
        self.settings = settings
        self.texts = texts
        self.client = client
        self.support = support
        self.fixer = fix_all
        self.comparisons = ProfileComparisons()
        self.traces = TraceAnnotations()  # the last analysed trace's annotations, per local file

    # --- torchtriage.profile ----------------------------------------------------------

    def _script_for(self, state: DocumentState, folder: Path, cell: str | int | None = None) -> tuple[Path, Any]:
        """The script to run and a mapper from its lines back to targets."""
        snapshot = self.texts.snapshot(state)
        if state.notebook and cell is not None:
            snapshot = _up_to_cell(snapshot, cell)
        if not state.notebook and state.path is not None and state.path.exists():
            path = state.path.resolve()

            def mapper(p: str, line: int) -> tuple[str, int] | None:
                return (state.uri, line) if _same_file(p, path) else None

            return path, mapper
        if not state.notebook:
            snapshot = snapshot[:1]
        joined = build_virtual_module([text for _, _, text in snapshot])
        script = folder / "notebook_script.py"
        script.write_text(joined.source, encoding="utf-8")

        def cell_mapper(p: str, line: int) -> tuple[str, int] | None:
            if not _same_file(p, script):
                return None
            cell, local = joined.to_cell(line)
            return snapshot[cell][0], local

        return script, cell_mapper

    async def profile(self, arguments: list[Any] | None, token: types.ProgressToken | None) -> dict[str, Any]:
        uri = _uri_argument(arguments)
        state = self.store.get(uri)
        if state is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        nproc, rank = _ranks_argument(arguments)
        out = self._run_folder(state)
        script, mapper = self._script_for(state, out, _cell_argument(arguments))
        ran_text = script.read_text(encoding="utf-8", errors="replace")
        if not state.notebook and state.uri in state.targets and state.targets[state.uri].text != ran_text:
            self.client.show(
                f"torchtriage: profiling the saved {script.name}; unsaved edits are not in this run "
                "(its hot lines are placed on the matching lines of the editor's text)",
                types.MessageType.Info,
            )
        command = [sys.executable, "-m", "torchtriage", "profile", "--progress", "json", "--out", str(out / "run")]
        if self.settings.interpreter:
            command += ["--python", self.settings.interpreter]
        if self.settings.profile_steps is not None:
            command += ["--active", str(self.settings.profile_steps)]
        if self.settings.profile_timeout_s is not None:
            command += ["--timeout", f"{self.settings.profile_timeout_s:g}"]
        if nproc is not None:  # under torchrun; the run folder's report is rank `rank`'s
            command += ["--nproc-per-node", str(nproc), "--show-rank", str(rank or 0)]
        for folder in self._workspace_roots(state, script):  # the workspace's code is the user's too
            command += ["--user-root", str(folder)]
        command.append(str(script))
        progress = self.client.progress
        if token is None and self.support.work_done_progress:
            token = str(uuid.uuid4())
            await progress.create_async(token)
        run = _Run(token)
        run.begin(progress, f"Profiling {script.name}")
        run.process = await asyncio.create_subprocess_exec(
            *command,
            cwd=str(script.parent),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole
        )
        if token is not None and token in progress.tokens:
            progress.tokens[token].add_done_callback(lambda future: run.cancel() if future.cancelled() else None)
        try:
            code = await run.follow(progress)
        finally:
            progress.tokens.pop(token, None)
        report_path = out / "run" / "report.json"
        if not report_path.is_file():
            run.end(progress, "failed")
            detail = "\n".join(run.tail[-8:])
            self.client.show(f"torchtriage profile failed (exit {code}): {detail}", types.MessageType.Error)
            raise ProfileFailed(f"profile exited with {code} and no report: {detail}")
        payload = self._load(state, report_path, mapper, script, ran_text)
        run.end(progress, f"{payload['summary']['bottleneck']} bound")
        return payload

    def _workspace_roots(self, state: DocumentState, script: Path) -> list[Path]:
        """The workspace folders holding the document (a notebook's, whose script is written to the run folder)."""
        document = (state.path or script).resolve()
        return [folder.resolve() for folder in self.texts.folders() if folder.is_dir() and document.is_relative_to(folder.resolve())]

    def _run_folder(self, state: DocumentState) -> Path:
        """A new folder for this run: under the ``runFolder`` setting (relative to the document's folder), else temporary."""
        return self._run_folder_near(state.path, state.path.stem if state.path is not None else "profile")

    def _run_folder_near(self, path: Path | None, stem: str, kind: str = "profile") -> Path:
        """A new folder for a run on ``path``: under the ``runFolder`` setting (relative to its folder), else temporary."""
        if not self.settings.run_folder:
            return Path(tempfile.mkdtemp(prefix=f"torchtriage-{kind}-"))
        base = Path(self.settings.run_folder).expanduser()
        if not base.is_absolute():
            base = (path.parent if path is not None else Path.cwd()) / base
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-", dir=base))

    def _load(
        self, state: DocumentState, report_path: Path, mapper: Any, script: Path, ran_text: str
    ) -> dict[str, Any]:
        report = json.loads(report_path.read_text(encoding="utf-8"))
        self.traces.forget(state)  # this profile's lines replace an analysed trace's on the file
        comparison = self.comparisons.after_profile(state.uri, report_path)
        header = None
        loops = step_loop_lines(ran_text)
        if loops:
            header = mapper(str(script), loops[0])
        deltas = hot_line_deltas(comparison["document"]) if comparison else None
        per_target = annotations_from_report(report, mapper, header, deltas, comparison["verdict"] if comparison else "")
        for target in state.targets.values():
            target.annotations = per_target.get(target.uri, [])
            if not state.notebook and target.text != ran_text:  # edited since: keep lines that still match
                target.annotations = shift_annotations(target.annotations, LineMap.for_texts(ran_text, target.text))
        state.profile = summary_from_report(report, report_path)
        self.engine.publish(state)
        summary = state.profile
        payload = {
            "uri": state.uri,
            "reportPath": summary.report_path,
            "htmlPath": summary.html_path,
            "summary": {"bottleneck": summary.bottleneck, "share": summary.share, "stepTimeMs": summary.step_time_ms},
            "rank": (report.get("ranks") or {}).get("shown_rank"),  # the rank annotated (multi-process runs), else None
            "ranks": (report.get("ranks") or {}).get("covered", []),
            "hotLines": [
                {
                    "uri": target.uri,
                    "line": a.line,
                    "share": a.share,
                    "msPerStep": a.ms_per_step,
                    "category": a.category,
                    "label": a.label,
                    "codes": list(a.codes),
                    "deltaMsPerStep": a.delta_ms,
                }
                for target in state.targets.values()
                for a in target.annotations
                if a.kind == "hotspot"
            ],
        }
        if comparison is not None:
            payload["comparison"] = comparison
        self._publish_report(payload)
        return payload

    def _publish_report(self, payload: dict[str, Any]) -> None:
        """The profileReport notification, then code lenses and inlay hints asked again (annotations moved)."""
        self.client.notify(PROFILE_REPORT, payload)
        if self.support.code_lens_refresh:
            self.client.refresh_code_lenses()
        if self.support.inlay_hint_refresh:
            self.client.refresh_inlay_hints()

    # --- torchtriage.analyze --------------------------------------------------------------

    async def analyze(self, arguments: list[Any] | None, token: types.ProgressToken | None) -> dict[str, Any]:
        """``torchtriage analyze`` on a trace recorded elsewhere, in the background; the profileReport payload."""
        trace = trace_argument(arguments)
        out = self._run_folder_near(trace, "analyze-" + trace.name.split(".")[0], "analyze")
        roots = [folder.resolve() for folder in self.texts.folders() if folder.is_dir()]
        command = [sys.executable, "-m", "torchtriage", "analyze", "--out", str(out / "run")]
        for root in roots:  # the trace's file names are found under the workspace folders first
            command += ["--source-root", str(root)]
        command.append(str(trace))
        report_path = out / "run" / "report.json"
        run = await self._run_cli_for(report_path, command, trace.parent, token, f"Analysing the trace {trace.name}", "analyze")
        payload = self._load_trace(trace, report_path)
        run.end(self.client.progress, f"{payload['summary']['bottleneck']} bound")
        return payload

    def _load_trace(self, trace: Path, report_path: Path) -> dict[str, Any]:
        """The analysed trace's annotations on the open documents it has lines on; notify and return the payload."""
        report = json.loads(report_path.read_text(encoding="utf-8"))
        texts = {state.path.resolve(): state for state in self.store.all() if not state.notebook and state.path is not None}
        previous = self.traces.report_path
        files = self.traces.build(report, {path: state.uri for path, state in texts.items()})
        dropped = self.traces.replace(str(report_path), summary_from_report(report, report_path), files)
        shown = {}
        for path, state in texts.items():
            if self.traces.show(state):
                shown[path] = state
                self.engine.publish(state)
            elif path in dropped and state.profile is not None and state.profile.report_path == previous:
                state.profile = None  # the previous trace's lines on a file this one has none on
                for target in state.targets.values():
                    target.annotations = []
                self.engine.publish(state)
        summary = self.traces.summary
        assert summary is not None
        payload = trace_payload(trace, report, summary, trace_hot_lines(self.traces.files, shown))
        self._publish_report(payload)
        return payload

    def opened(self, state: DocumentState) -> None:
        """A text document just opened: the last analysed trace's annotations on it, if it has lines there."""
        self.traces.show(state)

    # --- torchtriage.lab ----------------------------------------------------------------

    async def lab(self, arguments: list[Any] | None, token: types.ProgressToken | None) -> dict[str, Any]:
        """fp32 / bf16 / bf16 + compile on the document's script, in the background; the labReport payload."""
        uri = _uri_argument(arguments)
        state = self.store.get(uri)
        if state is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        options = lab_options(arguments)
        out = self._run_folder(state)
        script, _ = self._script_for(state, out)
        command = [sys.executable, "-m", "torchtriage", "lab", "--progress", "json", "--out", str(out / "lab"), *options]
        if self.settings.interpreter:
            command += ["--python", self.settings.interpreter]
        if self.settings.profile_timeout_s is not None:
            command += ["--timeout", f"{self.settings.profile_timeout_s:g}"]
        command.append(str(script))
        lab_path = out / "lab" / "lab.json"
        run = await self._run_cli_for(lab_path, command, script.parent, token, f"Lab: fp32 / bf16 / compile on {script.name}", "lab")
        payload = lab_payload(uri, lab_path)
        self.client.notify(LAB_REPORT, payload)
        run.end(self.client.progress, payload["reading"][0] if payload["reading"] else "done")
        return payload

    # --- torchtriage.verifyFixes / torchtriage.applyVerifiedFixes ------------------------

    def _open_script(self, arguments: list[Any] | None, what: str) -> tuple[str, DocumentState]:
        """The command's document: open, and a .py script (``what`` begins the error for a notebook)."""
        uri = _uri_argument(arguments)
        state = self.store.get(uri)
        if state is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        if state.notebook:
            raise JsonRpcInvalidParams(f"{what} a .py script, not a notebook")
        return uri, state

    async def verify_fixes(self, arguments: list[Any] | None, token: types.ProgressToken | None) -> dict[str, Any]:
        """``fix --verify`` on the document's saved script, in the background; verify.json with ``uri`` and ``verifyJson``."""
        uri, state = self._open_script(arguments, "torchtriage.verifyFixes verifies the fixes of")
        options = verify_options(arguments)
        out = self._run_folder(state)
        script, _ = self._script_for(state, out)
        target = state.targets.get(state.uri)
        if target is not None and target.text != script.read_text(encoding="utf-8", errors="replace"):
            self.client.show(
                f"torchtriage: verifying the fixes of the saved {script.name}; unsaved edits are not in this run "
                "(and its fixes apply only to the text that was verified)",
                types.MessageType.Info,
            )
        command = [sys.executable, "-m", "torchtriage", "fix", "--verify", "--progress", "json", "--out", str(out / "verify"), *options]
        if self.settings.interpreter:
            command += ["--python", self.settings.interpreter]
        if self.settings.profile_timeout_s is not None:
            command += ["--timeout", f"{self.settings.profile_timeout_s:g}"]
        command.append(str(script))
        verify_path = out / "verify" / VERIFY_JSON
        run = await self._run_cli_for(verify_path, command, script.parent, token, f"Verifying the fixes of {script.name}", "fix --verify")
        payload = verify_payload(uri, verify_path)
        self.client.notify(VERIFY_REPORT, payload)
        run.end(self.client.progress, verify_summary(payload))
        return payload

    async def apply_verified_fixes(self, arguments: list[Any] | None) -> bool:
        """The fixes of a verify.json that help, via ``workspace/applyEdit``, while the editor's text is the
        text that was verified (else a message says why nothing was applied); whether the client applied them."""
        uri, state = self._open_script(arguments, "torchtriage.applyVerifiedFixes applies to")
        verify_path = verify_path_argument(arguments)
        document = load_verification(verify_path)
        script = Path(document["script"])
        if state.path is not None and state.path.exists() and not _same_file(str(script), state.path):
            raise JsonRpcInvalidParams(f"{verify_path} verified {script}, not {state.path}")
        fix = chosen_fix(document)
        if fix is None:
            self.client.show(f"torchtriage: no verified fix makes {script.name} measurably faster; nothing to apply")
            return False
        [(_, version, text)] = self.texts.snapshot(state)
        problem = stale_reason(document, fix, text)
        if problem is not None:
            self.client.show(f"torchtriage: nothing applied: {problem}. Verify the fixes again.", types.MessageType.Warning)
            return False
        edits = text_edits(effective_edits(text, fix_edits(fix)), self.texts.positions(text))
        label = f"torchtriage: apply the verified fix ({fix['code']})"
        return await self.client.apply_edit(versioned_edit(uri, version, edits), label=label)

    async def _run_cli_for(
        self, output: Path, command: list[str], cwd: Path, token: types.ProgressToken | None, title: str, name: str
    ) -> "_Run":
        """:meth:`_run_cli`, then the file the command writes: when it is missing the failure is shown and raised."""
        run, code = await self._run_cli(command, cwd, token, title)
        if not output.is_file():
            run.end(self.client.progress, "failed")
            detail = "\n".join(run.tail[-8:])
            self.client.show(f"torchtriage {name} failed (exit {code}): {detail}", types.MessageType.Error)
            raise ProfileFailed(f"{name} exited with {code} and no {output.name}: {detail}")
        return run

    async def _run_cli(self, command: list[str], cwd: Path, token: types.ProgressToken | None, title: str) -> tuple["_Run", int]:
        """Run a torchtriage CLI command in its own process group with ``$/progress``; the run and its exit code."""
        progress = self.client.progress
        if token is None and self.support.work_done_progress:
            token = str(uuid.uuid4())
            await progress.create_async(token)
        run = _Run(token)
        run.begin(progress, title)
        run.process = await asyncio.create_subprocess_exec(
            *command, cwd=str(cwd), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
        if token is not None and token in progress.tokens:
            progress.tokens[token].add_done_callback(lambda future: run.cancel() if future.cancelled() else None)
        try:
            code = await run.follow(progress)
        finally:
            progress.tokens.pop(token, None)
        return run, code

    # --- the small ones ----------------------------------------------------------------

    def compare(self, arguments: list[Any] | None) -> dict[str, Any]:
        """``torchtriage.compare``: the compare.json document (see ``comparison``)."""
        return self.comparisons.command(arguments)

    def clear_profile(self, arguments: list[Any] | None) -> None:
        state = self.store.get(_uri_argument(arguments))
        if state is None:
            return
        state.profile = None
        self.traces.forget(state)
        for target in state.targets.values():
            target.annotations = []
        self.engine.publish(state)
        if self.support.inlay_hint_refresh:
            self.client.refresh_inlay_hints()

    async def show_report(self, arguments: list[Any] | None) -> bool:
        path = arguments[0] if arguments else None
        if not isinstance(path, str):
            raise JsonRpcInvalidParams("expected the report path as the first argument")
        html = Path(path).with_name("report.html")
        target = html if html.exists() else Path(path)
        return await self.client.show_document(target.as_uri(), external=target.suffix == ".html")

    async def fix_all(self, arguments: list[Any] | None) -> bool:
        uri = _uri_argument(arguments)
        state = self.store.get(uri)
        if state is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        await self.engine.current(state)
        target = state.targets.get(uri)
        if target is None:
            return False
        fixed = await self.fixer.compute(state, target)
        if fixed.edit is None:
            return False
        return await self.client.apply_edit(fixed.edit, label="torchtriage: fix all")  # (refused if the text moved on)


@dataclass
class _Run:
    """One profile process and its progress token."""

    token: types.ProgressToken | None
    process: asyncio.subprocess.Process | None = None
    cancelled: bool = False
    tail: list[str] = field(default_factory=list)

    def begin(self, progress: Any, title: str) -> None:
        if self.token is not None:
            progress.begin(self.token, types.WorkDoneProgressBegin(title=title, cancellable=True, message="starting"))

    def end(self, progress: Any, message: str) -> None:
        if self.token is not None:
            progress.end(self.token, types.WorkDoneProgressEnd(message=message))

    def cancel(self) -> None:
        self.cancelled = True
        if self.process is not None:
            _kill_group(self.process)

    async def follow(self, progress: Any) -> int:
        """Forward output lines as progress until the process ends; its exit code."""
        process = self.process
        assert process is not None and process.stdout is not None
        try:
            async for raw in process.stdout:
                line = raw.decode("utf-8", errors="replace")
                self.tail = (self.tail + [line.rstrip()])[-20:]
                message, percentage = _progress_text(line)
                if self.token is not None and message:
                    progress.report(self.token, types.WorkDoneProgressReport(message=message, percentage=percentage))
            code = await process.wait()
        except asyncio.CancelledError:  # $/cancelRequest
            self.cancel()
            await _reap(process)
            self.end(progress, "cancelled")
            raise
        if self.cancelled:  # window/workDoneProgress/cancel
            await _reap(process)
            self.end(progress, "cancelled")
            raise JsonRpcRequestCancelled("profile cancelled")
        return code


def _same_file(reported: str, path: Path) -> bool:
    try:
        return Path(reported).resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGINT to the CLI's process group: the runtime then stops the script's own
    session (SIGTERM, then SIGKILL) and exits; ``_reap`` SIGKILLs whatever is left."""
    if process.returncode is None:
        signal_group(process.pid, signal.SIGINT)


async def _reap(process: asyncio.subprocess.Process) -> None:
    try:
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    except asyncio.TimeoutError:
        signal_group(process.pid, signal.SIGKILL)
        await process.wait()
