"""The workspace index's builds: the project model of one folder, in a process of its own.

Building the project model of a real repository takes seconds (timm: ~2 s with every
parse cached, ~11 s cold).  In the server's own process that work would hold the GIL
against the analysis of the document being typed in, so a build that overlaps typing
would slow every edit; in a worker process it runs on another core and the editor
never waits for it.  The worker keeps, per project, the files read from disk (re-read
when their modification time changes or the server says they changed) and their parses
(only changed files are parsed again), so a rebuild after an edit costs the model, not
the parsing.  This module imports no editor library: it is what the worker loads.
"""

from __future__ import annotations

from pathlib import Path

from ..analysis.incremental.reparse import ParsedModule
from ..analysis.project.program import Project
from ..analysis.project_view import ProjectView
from ..config import Settings
from ..findings import Finding
from ..sources import read_source

__all__ = ["ProjectFiles", "build_views"]


class ProjectFiles:
    """One project's files on disk and their parses, kept between builds."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.disk: dict[Path, tuple[float, str]] = {}  # path -> (mtime, text)
        self.parses: dict[str, tuple[str, ParsedModule | Finding]] = {}  # display path -> (text, parse)

    def views(
        self, files: list[Path], texts: dict[Path, str], settings: Settings, changed: list[Path]
    ) -> dict[Path, ProjectView | None]:
        """What the project tells each open document (``texts``: their editor texts; ``files``:
        the project's files on disk, empty when it is too big to model; ``changed``: files
        whose text on disk may have changed)."""
        for path in changed:
            self.disk.pop(path, None)
        paths = list(dict.fromkeys([*files, *texts])) if files else list(texts)
        if len(paths) <= 1:
            return {path: None for path in texts}  # a file alone: nothing to add to its own analysis
        entries = []
        for path in paths:
            text = texts.get(path)
            if text is None:
                text = self._disk_text(path)
            if text is None:
                continue
            relative = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.name
            entries.append((str(path), relative, text))
        live = {display for display, _, _ in entries}
        for stale in [p for p in self.parses if p not in live]:
            del self.parses[stale]
        project = Project(entries, settings, relative_labels=True, parse_cache=self.parses)
        return {path: project.view(str(path)) for path in texts}

    def _disk_text(self, path: Path) -> str | None:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            self.disk.pop(path, None)
            return None
        cached = self.disk.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        source = read_source(path)
        if source is None or source.text is None:
            return None
        self.disk[path] = (mtime, source.text)
        return source.text


# The worker process's state: it serves one language server, which sends it every build.
_projects: dict[Path, ProjectFiles] = {}


def build_views(
    root: Path, files: list[Path], texts: dict[Path, str], settings: Settings, changed: list[Path]
) -> dict[Path, ProjectView | None]:
    """One build, in the worker (see :meth:`ProjectFiles.views`)."""
    project = _projects.get(root)
    if project is None:
        project = _projects[root] = ProjectFiles(root)
    return project.views(files, texts, settings, changed)
