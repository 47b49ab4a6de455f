"""Check and fix files on disk: the host-free orchestration behind the CLI.

Python files and notebooks go through the same analysis core; folders are
checked in parallel worker processes when there are enough files to pay for it.
"""

from __future__ import annotations

import codecs
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from .analysis import analyze_source, fix_source
from .config import Settings
from .findings import Finding
from .gcpause import collector_pause
from .sources import iter_source_files, read_source

PARALLEL_THRESHOLD = 16


@dataclass
class FileReport:
    """The outcome of checking (and maybe fixing) one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None  # unreadable / skipped with a reason
    fixed: int = 0
    new_text: str | None = None  # set when fixes changed the file


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def check_text(text: str, display: str, settings: Settings, is_notebook: bool) -> list[Finding]:
    if is_notebook:
        from .analysis.notebooks import analyze_notebook

        return analyze_notebook(text, display, settings)
    return analyze_source(text, display, settings)


def check_file(
    path: Path,
    settings: Settings,
    fix: bool = False,
    unsafe: bool = False,
    require_torch: bool = False,
) -> FileReport | None:
    """Check one file; with ``fix``, compute the fixed text too (not written here)."""
    display = _display_path(path)
    source = read_source(path, require_torch=require_torch)
    if source is None:
        return None
    if source.text is None:
        return FileReport(display, error=source.error)
    is_notebook = path.suffix == ".ipynb"
    try:
        if fix:
            if is_notebook:
                from .analysis.notebooks import fix_notebook

                new_text, applied, remaining = fix_notebook(source.text, display, settings, unsafe)
            else:
                result = fix_source(source.text, display, settings, unsafe)
                new_text, applied, remaining = result.source, result.applied, result.remaining
            report = FileReport(display, remaining, fixed=applied)
            if new_text != source.text:
                report.new_text = new_text
            return report
        return FileReport(display, check_text(source.text, display, settings, is_notebook))
    except ValueError as exc:  # e.g. a notebook that is not valid JSON
        return FileReport(display, error=str(exc))


def _check_one(args: tuple[Path, Settings, bool, bool, bool]) -> FileReport | None:
    return check_file(*args)


def check_paths(
    paths: Sequence[Path],
    settings: Settings,
    fix: bool = False,
    unsafe: bool = False,
    jobs: int | None = None,
) -> list[FileReport]:
    """Check every file under ``paths``; folders skip files that never mention torch.

    Without ``fix``, Python files are analysed within their project (see
    :func:`check_project_paths`); fixing works file by file.  The garbage collector is paused
    meanwhile (see :mod:`torchtriage.gcpause`)."""
    with collector_pause.during_analysis():
        return _check_paths(paths, settings, fix, unsafe, jobs)


def _check_paths(
    paths: Sequence[Path], settings: Settings, fix: bool, unsafe: bool, jobs: int | None
) -> list[FileReport]:
    if not fix:
        return check_project_paths(paths, settings, jobs)
    explicit = {p.resolve() for p in paths if p.is_file()}
    files = list(iter_source_files(paths, settings))
    work = [(f, settings, fix, unsafe, f.resolve() not in explicit) for f in files]
    jobs = jobs or min(os.cpu_count() or 1, 8)
    if jobs > 1 and len(work) >= PARALLEL_THRESHOLD:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_check_one, work, chunksize=4))
    else:
        results = [_check_one(item) for item in work]
    return [r for r in results if r is not None]


def write_fixes(reports: Iterable[FileReport]) -> int:
    """Write fixed text back; returns how many files changed."""
    written = 0
    for report in reports:
        if report.new_text is not None:
            path = Path(report.path)
            with path.open("rb") as handle:
                bom = handle.read(3) == codecs.BOM_UTF8
            path.write_text(report.new_text, encoding="utf-8-sig" if bom else "utf-8", newline="")
            written += 1
    return written


# --- projects: files analysed together (see analysis.project) ---------------------------------

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_PROJECT_FILES = 2000


def project_root(path: Path) -> Path:
    """The folder holding a file's project: the nearest with pyproject/setup/git markers, else its own."""
    start = path.resolve().parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start


def _python_files(root: Path, settings: Settings) -> list[Path]:
    files = []
    for file in iter_source_files([root], settings):
        if file.suffix == ".py":
            files.append(file)
            if len(files) > MAX_PROJECT_FILES:
                return []  # too big to model as one program: files are checked one by one
    return files


def _load_project(root: Path, files: list[Path], settings: Settings):  # type: ignore[no-untyped-def]
    from .analysis.project.program import Project

    entries = []
    for file in files:
        source = read_source(file)
        if source is None or source.text is None:
            continue
        relative = file.resolve().relative_to(root.resolve()).as_posix() if file.resolve().is_relative_to(root.resolve()) else file.name
        entries.append((_display_path(file), relative, source.text))
    return Project(entries, settings)


def check_project_paths(
    paths: Sequence[Path], settings: Settings, jobs: int | None = None, imported_only: bool = False, fixes: bool = True
) -> list[FileReport]:
    """Check ``paths`` with each Python file analysed inside its project: a folder is one project;
    a file named directly is analysed within the project found from its markers.  Notebooks and
    files that cannot be read are checked as before, one by one.

    ``imported_only``: a named file's project is only the named files and the project files they
    import, transitively (:mod:`.analysis.project.closure`): the program a run executed, for the
    static findings of a profile or an analysed trace.  ``fixes=False``: the findings without their
    fixes (a report links findings and never shows a fix; building them loads libcst).

    A project is parsed and solved once, in this process; its files' rules then run in forked
    worker processes when there are enough of them (see :func:`_analyze_project_files`)."""
    explicit = {p.resolve() for p in paths if p.is_file()}
    files = list(iter_source_files(paths, settings))
    projects: dict[Path, list[Path]] = {}
    for path in paths:
        if path.is_dir():
            projects.setdefault(path.resolve(), [])
    loaded: dict[Path, object] = {}
    slots: list[FileReport | tuple[object, str]] = []  # a report, or (project, display path) to analyse
    for file in files:
        resolved = file.resolve()
        if file.suffix != ".py":
            report = check_file(file, settings, require_torch=resolved not in explicit)
            if report is not None:
                slots.append(report)
            continue
        roots = [root for root in projects if resolved.is_relative_to(root)]
        root = max(roots, key=lambda r: len(r.parts)) if roots else project_root(file)
        if root not in loaded:
            members = _python_files(root, settings)
            if imported_only and members:
                from .analysis.project.closure import import_closure

                members = import_closure(root, members, [p for p in explicit if p.is_relative_to(root.resolve())])
            if resolved not in {m.resolve() for m in members} and members:
                members.append(file)
            loaded[root] = _load_project(root, members, settings) if members else None
        project = loaded[root]
        display = _display_path(file)
        member = project is not None and display in project.by_path  # type: ignore[attr-defined]
        source = read_source(file, require_torch=resolved not in explicit, training_will_do=member)
        if source is None:
            continue
        if source.text is None:
            slots.append(FileReport(display, error=source.error))
            continue
        if project is None or display not in project.by_path:  # type: ignore[attr-defined]
            slots.append(FileReport(display, check_text(source.text, display, settings, False)))
            continue
        slots.append((project, display))
    findings: dict[tuple[int, str], list[Finding]] = {}
    for project in {id(s[0]): s[0] for s in slots if isinstance(s, tuple)}.values():
        wanted = [display for owner, display in (s for s in slots if isinstance(s, tuple)) if owner is project]
        for display, found in zip(wanted, _analyze_project_files(project, wanted, jobs, fixes)):
            findings[(id(project), display)] = found
    return [s if isinstance(s, FileReport) else FileReport(s[1], findings[(id(s[0]), s[1])]) for s in slots]


_FORKED_PROJECT = None  # the solved project forked workers analyse (set only while a pool runs)


def _analyze_in_fork(display: str, fixes: bool = True) -> list[Finding]:
    return _FORKED_PROJECT.analyze(display, fixes=fixes)  # type: ignore[attr-defined]


def _analyze_project_files(  # type: ignore[no-untyped-def]
    project, displays: list[str], jobs: int | None, fixes: bool = True
) -> list[list[Finding]]:
    """Findings for each file of a project: solved once here, then the rules run in forked worker
    processes that inherit the solved project (nothing is re-parsed or pickled but the findings),
    or in this process where ``fork`` is not available or there are few files."""
    global _FORKED_PROJECT
    project.solve()
    jobs = jobs or min(os.cpu_count() or 1, 8)
    if jobs < 2 or len(displays) < PARALLEL_THRESHOLD or not sys.platform.startswith("linux"):  # fork: Linux only
        return [project.analyze(display, fixes=fixes) for display in displays]
    _FORKED_PROJECT = project
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_analyze_in_fork, displays, [fixes] * len(displays),
                                 chunksize=max(1, len(displays) // (jobs * 4))))
    finally:
        _FORKED_PROJECT = None
