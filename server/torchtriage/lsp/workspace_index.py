"""The workspace index: every open Python document analysed within its project.

Each open document belongs to a project (the folder :func:`checker.project_root`
finds from pyproject/setup/git markers).  The index keeps, per project, the
files on disk (read once, re-read when their modification time changes or a
``workspace/didChangeWatchedFiles`` event names them) overlaid with the open
documents' editor texts, and rebuilds the project model in the analysis
thread pool after opens, saves and closes (at once) and after edits (once they
pause, :data:`EDIT_DELAY_S`).  Each open document gets the facts the rest of
its project contributes (a :class:`ProjectView`: which of its functions run
every step because of another file, where its CUDA device comes from, knob
defaults); a document whose view changed is re-analysed and re-published.

A document's own analysis never waits for the index: it runs with the last
view it got (none before the first build), so typing speed and the first
diagnostics are those of single-file analysis.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.project import Project
from ..analysis.project_view import ProjectView
from ..checker import MAX_PROJECT_FILES, project_root
from ..sources import iter_source_files, read_source
from .background import Spawn
from .documents import DocumentState, DocumentStore
from .settings import SettingsManager

if TYPE_CHECKING:
    from .diagnostics import DiagnosticsEngine

log = logging.getLogger(__name__)

OPEN_DELAY_S = 0.05  # open, save, close, files changed on disk (after the document's own analysis)
EDIT_DELAY_S = 1.5  # after the last edit: the index is rebuilt when typing pauses


class _Root:
    """One project's files and rebuild state."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[Path] | None = None  # None: walk again
        self.disk: dict[Path, tuple[float, str]] = {}  # path -> (mtime, text)
        self.timer: asyncio.TimerHandle | None = None
        self.running: asyncio.Future[object] | None = None
        self.dirty = 0  # bumped by every change; a build of an older one rebuilds again
        self.parses: dict = {}  # display path -> (text, parse): only changed files are re-parsed


class WorkspaceIndex:
    def __init__(
        self,
        store: DocumentStore,
        settings: SettingsManager,
        executor: Executor,
        spawn: Spawn,
    ) -> None:
        self.store = store
        self.settings = settings
        self.executor = executor
        self.spawn = spawn
        self.engine: "DiagnosticsEngine | None" = None  # set by the composition root
        self._roots: dict[Path, _Root] = {}
        self._root_of_dir: dict[Path, Path] = {}
        self.builds = 0  # for tests and benches

    # --- events (event-loop thread) ------------------------------------------------------

    def document_changed(self, state: DocumentState, edit: bool = False) -> None:
        """A document was opened, edited, saved or closed."""
        if state.notebook or state.path is None:
            return
        self._schedule(self._root_for(state.path), EDIT_DELAY_S if edit else OPEN_DELAY_S)

    def files_changed(self, paths: list[Path], created_or_deleted: bool) -> None:
        """``workspace/didChangeWatchedFiles`` for Python files."""
        for path in paths:
            resolved = path.resolve()
            for root in self._roots.values():
                if resolved.is_relative_to(root.root):
                    root.disk.pop(resolved, None)
                    if created_or_deleted:
                        root.files = None
                    self._schedule(root, OPEN_DELAY_S)

    def _root_for(self, path: Path) -> _Root:
        folder = path.resolve().parent
        top = self._root_of_dir.get(folder)
        if top is None:
            top = self._root_of_dir[folder] = project_root(path)
        root = self._roots.get(top)
        if root is None:
            root = self._roots[top] = _Root(top)
        return root

    def _schedule(self, root: _Root, delay: float) -> None:
        root.dirty += 1
        if root.timer is not None:
            root.timer.cancel()
        loop = asyncio.get_running_loop()
        root.timer = loop.call_later(delay, lambda: self.spawn(self._rebuild(root)))

    async def _rebuild(self, root: _Root) -> None:
        if root.running is not None and not root.running.done():
            await asyncio.wait([root.running])
        open_states = [s for s in self.store.all() if not s.notebook and s.path is not None]
        members = [s for s in open_states if s.path.resolve().is_relative_to(root.root)]  # type: ignore[union-attr]
        if not members:
            return
        # The documents' own analyses go first: the index never delays their diagnostics.
        await asyncio.gather(*(s.done.wait() for s in members))
        generation = root.dirty
        texts = {s.path.resolve(): s.targets[s.uri].text for s in members if s.uri in s.targets}  # type: ignore[union-attr]
        settings = self.settings.for_path(members[0].path)
        loop = asyncio.get_running_loop()
        root.running = future = loop.run_in_executor(self.executor, self._views, root, texts, settings)
        try:
            views: dict[Path, ProjectView | None] = await future  # type: ignore[assignment]
        except Exception:
            log.exception("workspace index: rebuilding %s failed", root.root)
            return
        self.builds += 1
        if generation != root.dirty:
            return  # changed meanwhile: a newer rebuild is scheduled
        for state in members:
            if self.store.get(state.uri) is not state:
                continue
            view = views.get(state.path.resolve())  # type: ignore[union-attr]
            if view != state.project_view:
                state.project_view = view
                state.refresh_pending = True
                if self.engine is not None:
                    self.engine.schedule(state, immediate=True)

    # --- the build (analysis thread) -------------------------------------------------------

    def _views(self, root: _Root, texts: dict[Path, str], settings) -> dict[Path, ProjectView | None]:  # type: ignore[no-untyped-def]
        if root.files is None:
            files: list[Path] = []
            for file in iter_source_files([root.root], settings):
                if file.suffix == ".py":
                    files.append(file.resolve())
                    if len(files) > MAX_PROJECT_FILES:
                        files = []
                        break
            root.files = files
        paths = list(dict.fromkeys([*root.files, *texts]))
        if not root.files:
            paths = list(texts)  # too big to model: open documents only
        if len(paths) <= 1:
            return {path: None for path in texts}  # a file alone: nothing to add to its own analysis
        entries = []
        for path in paths:
            text = texts.get(path)
            if text is None:
                text = self._disk_text(root, path)
            if text is None:
                continue
            relative = path.relative_to(root.root).as_posix() if path.is_relative_to(root.root) else path.name
            entries.append((str(path), relative, text))
        live = {display for display, _, _ in entries}
        for stale in [p for p in root.parses if p not in live]:
            del root.parses[stale]
        project = Project(entries, settings, relative_labels=True, parse_cache=root.parses)
        return {path: project.view(str(path)) for path in texts}

    def _disk_text(self, root: _Root, path: Path) -> str | None:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            root.disk.pop(path, None)
            return None
        cached = root.disk.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        source = read_source(path)
        if source is None or source.text is None:
            return None
        root.disk[path] = (mtime, source.text)
        return source.text
