"""Findings -> published diagnostics: debounced per document, never stale.

Every change bumps the document's generation and (re)starts its debounce
timer.  When it fires, the text is snapshotted and analysed in a worker
thread; the results are published only if no change arrived meanwhile, with
the version of the text they were computed on.  An idle document is analysed
at once; changes arriving while it is busy are coalesced after 20 ms (or
``debounceMs`` from the client options, fixed).

A client that pulls diagnostics (``textDocument/diagnostic``) gets them only
that way; it is asked to pull again (``workspace/diagnostic/refresh``) when
they change for another reason than its own edit.

A document that stops parsing gets its TT000 syntax diagnostic plus the last
good findings (moved with the edits, without their fixes) for the rest.

Each document keeps an incremental analyzer (a text document's
``IncrementalAnalyzer``, a notebook's ``NotebookAnalyzer`` over its joined
cells), so an edit re-parses only the statements it touched.  A text
document's diagnostics are published before its fixes are built (libcst:
~0.3 s to import, then a few ms per analysis of a long file); code actions
wait for the fixes.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Callable

from lsprotocol import types

from ..analysis.engine import IncrementalAnalyzer
from ..analysis.lazy import libcst
from ..analysis.notebooks import NotebookAnalyzer, analyze_cells
from ..analysis.text import split_lines
from ..analysis.project_view import ProjectView
from ..config import Settings
from ..findings import SYNTAX_ERROR_CODE, Finding, Severity
from ..gcpause import collector_pause
from .background import Spawn
from .capabilities import ClientSupport
from .client import ClientChannel
from .documents import Annotation, DocumentState, DocumentStore
from .positions import Positions
from .settings import SettingsManager
from .texts import EditorTexts, Snapshot

log = logging.getLogger(__name__)

SOURCE = "torchtriage"
PROFILE_SOURCE = "torchtriage-profile"
BUSY_DEBOUNCE_MS = 20.0

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}

Analyzer = IncrementalAnalyzer | NotebookAnalyzer


def new_analyzer(path: str, notebook: bool) -> Analyzer:
    """The incremental analyzer a document keeps between its versions."""
    return NotebookAnalyzer(path) if notebook else IncrementalAnalyzer(path)


def analyse_snapshot(
    snapshot: Snapshot,
    path: str,
    settings: Settings,
    notebook: bool,
    analyzer: Analyzer | None = None,
    project: ProjectView | None = None,
) -> dict[str, list[Finding]]:
    """:func:`analyse` with the cycle collector paused (see :class:`torchtriage.gcpause.CollectorPause`)."""
    with collector_pause.during_analysis():
        return analyse(snapshot, path, settings, notebook, analyzer, project)


def analyse(
    snapshot: Snapshot,
    path: str,
    settings: Settings,
    notebook: bool,
    analyzer: Analyzer | None = None,
    project: ProjectView | None = None,
) -> dict[str, list[Finding]]:
    """Run the core on a snapshot: one module, or all cells together (worker thread).

    ``analyzer``: the document's incremental analyzer (for ``path``, of the document's kind);
    without one the snapshot is analysed from scratch.  ``project``: what the rest of the
    document's project contributes (text documents only, see :mod:`.workspace_index`).
    """
    if not notebook:
        uri, _, text = snapshot[0]
        if isinstance(analyzer, IncrementalAnalyzer):  # fixes after the diagnostics (DiagnosticsEngine._run)
            return {uri: analyzer.analyze(text, settings, project=project, defer_fixes=True)}
        return {uri: IncrementalAnalyzer(path).analyze(text, settings, project=project)}
    result: dict[str, list[Finding]] = {uri: [] for uri, _, _ in snapshot}
    cells = [text for _, _, text in snapshot]
    if isinstance(analyzer, NotebookAnalyzer):
        found = analyzer.analyze(cells, settings)
    else:
        found = analyze_cells(cells, path, settings)
    for finding in found:
        if finding.cell is not None and finding.cell.cell < len(snapshot):
            result[snapshot[finding.cell.cell][0]].append(finding)
    return result


def to_diagnostic(finding: Finding, positions: Positions, fixable: bool | None = None) -> types.Diagnostic:
    """``fixable``: whether a fix is offered, when the fix is still being built."""
    return types.Diagnostic(
        range=positions.to_range(finding.span),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        source=SOURCE,
        data={"name": finding.name, "fixable": finding.fix is not None if fixable is None else fixable},
    )


def annotation_diagnostic(annotation: Annotation, positions: Positions) -> types.Diagnostic:
    line_text = positions.lines[annotation.line - 1] if annotation.line <= len(positions.lines) else ""
    start = len(line_text) - len(line_text.lstrip()) + 1
    return types.Diagnostic(
        range=types.Range(
            start=positions.to_position(annotation.line, start), end=positions.line_end(annotation.line)
        ),
        message=annotation.message,
        severity=types.DiagnosticSeverity.Information,
        code=annotation.codes[0] if annotation.codes else None,
        source=PROFILE_SOURCE,
    )


class DiagnosticsEngine:
    """Schedules analyses, keeps results on the DocumentState, publishes them."""

    def __init__(
        self,
        store: DocumentStore,
        settings: SettingsManager,
        texts: EditorTexts,
        client: ClientChannel,
        support: ClientSupport,
        executor: Executor,
        spawn: Spawn,
    ) -> None:
        self.store = store
        self.settings = settings
        self.texts = texts
        self.client = client
        self.support = support
        self.executor = executor
        self.spawn = spawn
        self._running: dict[str, asyncio.Future[object]] = {}
        self._fixable: dict[str, Callable[[Finding], bool]] = {}  # while a document's fixes are built
        self._built: dict[str, dict[tuple[str, str, str], bool]] = {}  # per document: finding -> had a fix

    # --- scheduling -------------------------------------------------------------

    def debounce_s(self, state: DocumentState) -> float:
        """0 when the document is idle; a short coalescing delay while it is busy.

        Changes that arrive while an analysis runs are coalesced anyway (a run
        waits for the previous one and skips generations that are no longer
        the newest), so a long fixed debounce would only add latency.
        """
        configured = self.settings.debounce_ms
        if configured is not None:
            return configured / 1000
        running = self._running.get(state.uri)
        busy = (running is not None and not running.done()) or (state.timer is not None and not _fired(state.timer))
        return BUSY_DEBOUNCE_MS / 1000 if busy else 0.0

    def schedule(self, state: DocumentState, immediate: bool = False) -> None:
        """Analyse the document's current text after the debounce (or now)."""
        generation = state.touch()
        delay = 0.0 if immediate else self.debounce_s(state)
        if state.timer is not None:
            state.timer.cancel()
        loop = asyncio.get_running_loop()
        state.timer = loop.call_later(delay, lambda: self.spawn(self._run(state, generation)))

    async def current(self, state: DocumentState) -> None:
        """Wait until the published results match the document's current text."""
        if state.analysed != state.generation:
            if state.timer is not None:
                state.timer.cancel()
            await self._run(state, state.generation)
        await state.done.wait()

    async def _run(self, state: DocumentState, generation: int) -> None:
        # One analysis (or fix build) per document at a time: they share the document's analyzer.
        # Several runs may wait on the same one, so each checks again after waking; from here to
        # ``self._running[...] = slot`` nothing awaits, so the first to wake holds the slot.  The
        # slot is released only once the results are applied: a run of the same generation that
        # woke before that would analyse the text again and drop the fixes the first one deferred.
        while (previous := self._running.get(state.uri)) is not None and not previous.done():
            await asyncio.wait([previous])
        if generation != state.generation or state.analysed == generation:
            return  # a newer change will run its own analysis
        if self.store.get(state.uri) is not state:
            return  # closed meanwhile
        snapshot = self.texts.snapshot(state)
        settings = self.settings.for_path(state.path)
        path = str(state.path) if state.path else state.uri
        if state.analyzer is None or state.analyzer.path != path:
            state.analyzer = new_analyzer(path, state.notebook)
        loop = asyncio.get_running_loop()
        slot: asyncio.Future[object] = loop.create_future()
        self._running[state.uri] = slot
        try:
            results = await loop.run_in_executor(
                self.executor, analyse_snapshot, snapshot, path, settings, state.notebook, state.analyzer,
                state.project_view,
            )
            if generation == state.generation:  # (else stale: the text changed while we analysed it)
                self._apply(state, snapshot, results)
                state.analysed = generation
        except Exception:
            if generation == state.generation:  # keep the old results, release waiters
                state.analysed = generation
                state.done.set()
            raise
        finally:
            slot.set_result(None)
        if generation != state.generation:
            return
        analyzer = state.analyzer
        if not isinstance(analyzer, IncrementalAnalyzer) or not analyzer.has_deferred_fixes:
            state.done.set()
            self.publish(state, refresh=state.refresh_pending)
            state.refresh_pending = False
            return
        # Diagnostics first; then the fixes (libcst: ~0.3 s to import the first time, a few ms
        # for a long file after), which only code actions wait for (``done``).  Until they are
        # built, ``data.fixable`` says what the last build said for the same finding.
        target = state.targets[state.uri]
        findings, lines = target.findings, split_lines(target.text)
        known = self._built.get(state.uri, {})
        offered = {id(f) for f in findings if known.get(_fix_key(f, lines), analyzer.has_fix(f))}
        self._fixable[state.uri] = lambda finding: id(finding) in offered
        self.publish(state, refresh=state.refresh_pending)
        state.refresh_pending = False
        await self._build_fixes(state, analyzer, generation, findings, offered)

    async def _build_fixes(
        self, state: DocumentState, analyzer: IncrementalAnalyzer, generation: int, findings: list[Finding], offered: set[int]
    ) -> None:
        """Add the fixes of a deferred analysis to the published findings (worker thread); if a fix
        could not be built after all, publish again so ``data.fixable`` says so.

        The first build imports libcst (~0.3 s): that happens first, outside the document's
        slot, so an edit typed meanwhile is analysed at once instead of waiting for it (and
        these findings, stale by then, get no fixes: the edit's analysis builds its own)."""
        loop = asyncio.get_running_loop()
        if not libcst.loaded:
            fixable = self._fixable.get(state.uri)
            try:
                await loop.run_in_executor(self.executor, libcst.load)
            except ImportError:
                pass  # the builders below fail too (no fix offered) and release the waiters
            if generation != state.generation:
                if self._fixable.get(state.uri) is fixable:
                    self._fixable.pop(state.uri, None)
                return
        future = loop.run_in_executor(self.executor, _build_fixes, analyzer, findings)
        self._running[state.uri] = future
        try:
            fixed = await future
        finally:
            self._fixable.pop(state.uri, None)
            if generation == state.generation:
                state.done.set()
        if generation != state.generation:
            return  # a newer analysis replaces these findings
        target = state.targets[state.uri]
        target.findings = target.last_good = fixed
        lines = split_lines(target.text)
        self._built[state.uri] = {_fix_key(f, lines): f.fix is not None for f in fixed}
        if any((id(old) in offered) != (new.fix is not None) for old, new in zip(findings, fixed)):
            self.publish(state, refresh=False)

    def _apply(self, state: DocumentState, snapshot: Snapshot, results: dict[str, list[Finding]]) -> None:
        live = {uri for uri, _, _ in snapshot}
        for uri in [uri for uri in state.targets if uri not in live]:
            self.clear_target(state.targets.pop(uri).uri)
        for uri, version, text in snapshot:
            target = state.target(uri)
            self.store.bind(uri, state.uri)
            target.version, target.text = version, text
            findings = results.get(uri, [])
            syntax = [f for f in findings if f.code == SYNTAX_ERROR_CODE]
            if syntax:  # (a broken cell is blanked; the other cells keep fresh findings)
                target.findings = syntax + [replace(f, fix=None) for f in target.last_good]
            else:
                target.findings = target.last_good = findings

    # --- publishing ---------------------------------------------------------------

    def diagnostics_for(self, uri: str) -> list[types.Diagnostic]:
        state = self.store.get(uri)
        if state is None or uri not in state.targets:
            return []
        target = state.targets[uri]
        positions = self.texts.positions(target.text)
        fixable = self._fixable.get(uri)
        result = [to_diagnostic(f, positions, fixable(f) if fixable else None) for f in target.findings]
        result.extend(annotation_diagnostic(a, positions) for a in target.annotations if a.message)
        return result

    def publish(self, state: DocumentState, refresh: bool = True) -> None:
        """Push the state's diagnostics; to a client that pulls them, only ask it to pull again
        (``refresh``: when the change did not come from its own edit, e.g. settings or a profile)."""
        if self.support.pulls_diagnostics:
            if refresh and self.support.diagnostic_refresh:
                self.client.refresh_diagnostics()
            return
        for target in state.targets.values():
            self.client.publish_diagnostics(target.uri, self.diagnostics_for(target.uri), target.version)

    def clear_target(self, uri: str) -> None:
        self._built.pop(uri, None)
        if self.support.pulls_diagnostics:
            return  # nothing was pushed
        self.client.publish_diagnostics(uri, [])

    def refresh_all(self) -> None:
        """Settings changed: re-analyse every open document."""
        for state in self.store.all():
            state.refresh_pending = True
            self.schedule(state, immediate=True)


def _build_fixes(analyzer: IncrementalAnalyzer, findings: list[Finding]) -> list[Finding]:
    with collector_pause.during_analysis():
        return analyzer.build_fixes(findings)


def _fix_key(finding: Finding, lines: list[str]) -> tuple[str, str, str]:
    """A finding as the user sees it, whatever line it moved to: its code, message and line."""
    text = lines[finding.span.line - 1].strip() if 0 < finding.span.line <= len(lines) else ""
    return finding.code, finding.message, text


def _fired(timer: asyncio.TimerHandle) -> bool:
    return timer.cancelled() or timer.when() <= asyncio.get_running_loop().time()


def path_of(uri: str) -> Path | None:
    from pygls.uris import to_fs_path

    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None
