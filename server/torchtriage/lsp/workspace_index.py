"""The workspace index: every open Python document analysed within its project.

Each open document belongs to a project (the folder :func:`checker.project_root`
finds from pyproject/setup/git markers).  The index keeps, per project, the list of
its Python files, and rebuilds the project model after opens, saves and closes (at
once) and after edits (once they pause, :data:`EDIT_DELAY_S`) from the files on disk
overlaid with the open documents' editor texts.  Each open document gets the facts the
rest of its project contributes (a :class:`ProjectView`: which of its functions run
every step because of another file, where its CUDA device comes from, knob defaults);
a document whose view changed is re-analysed and re-published.

A document's own analysis never waits for the index: it runs with the last view it
got (none before the first build), so typing speed and the first diagnostics are those
of single-file analysis.  The builds themselves run in a worker process
(:mod:`.index_builder`, which keeps the files read from disk and their parses between
builds): a build of a whole repository takes seconds, and in the server's own process
it would hold the GIL against the analyses of the document being typed in.  A folder
with one Python file needs no build at all.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.project_view import ProjectView
from ..checker import MAX_PROJECT_FILES, project_root
from ..config import Settings
from ..sources import iter_source_files
from .background import Spawn
from .documents import DocumentState, DocumentStore
from .index_builder import build_views
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
        self.files: list[Path] | None = None  # None: walk again; empty: too many to model
        self.changed: set[Path] = set()  # files changed on disk since the last build
        self.timer: asyncio.TimerHandle | None = None
        self.running: asyncio.Future[object] | None = None
        self.dirty = 0  # bumped by every change; a build of an older one rebuilds again


def project_files(root: Path, settings: Settings) -> list[Path]:
    """The project's Python files (empty when there are too many to model as one program)."""
    files: list[Path] = []
    for file in iter_source_files([root], settings):
        if file.suffix == ".py":
            files.append(file.resolve())
            if len(files) > MAX_PROJECT_FILES:
                return []
    return files


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
        self._builder: ProcessPoolExecutor | None = None  # started by the first multi-file build
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
                    root.changed.add(resolved)
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
        if root.files is None:
            root.files = await loop.run_in_executor(self.executor, project_files, root.root, settings)
        if len(set(root.files) | set(texts)) <= 1:
            views: dict[Path, ProjectView | None] = {path: None for path in texts}  # a file alone
        else:
            changed, root.changed = list(root.changed), set()
            try:
                root.running = future = loop.run_in_executor(
                    self._worker(), build_views, root.root, root.files, texts, settings, changed
                )
                views = await future  # type: ignore[assignment]
            except Exception as exc:
                if isinstance(exc, BrokenProcessPool):
                    self._builder = None  # the worker died: the next build starts another
                root.changed.update(changed)
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

    def _worker(self) -> ProcessPoolExecutor:
        if self._builder is None:
            self._builder = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self._builder

    def close(self) -> None:
        """Stop the worker process, even in the middle of a build (the server is shutting down)."""
        builder, self._builder = self._builder, None
        if builder is not None:
            stop_worker(builder)


def stop_worker(builder: ProcessPoolExecutor) -> None:
    """Stop a build worker now, busy or not, so that this process can exit.

    The executor hands each build its project's texts through a queue whose feeder thread writes them to
    a pipe; a worker stopped mid-build can leave that thread blocked on a full pipe, and multiprocessing's
    exit handler joins it: once in CI the server never ended after a test's shutdown (its main thread in
    ``Queue._finalize_join``, the feeder in ``send_bytes``).  The queue is told not to be waited for."""
    call_queue = getattr(builder, "_call_queue", None)  # (no public way to stop a busy worker or its queue)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    processes = list(getattr(builder, "_processes", {}).values())
    builder.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
