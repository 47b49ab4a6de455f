"""Shared by the project-model tests: an invented project from dedented texts, and the check that the
language server's view of each file (:meth:`Project.view`, handed to one file's incremental analyzer)
gives the findings the whole-project analysis gives."""

from __future__ import annotations

import textwrap
from typing import Mapping

from torchtriage.analysis.engine import IncrementalAnalyzer
from torchtriage.analysis.project.program import Project


def project_of(files: Mapping[str, str]) -> Project:
    """A project of the files (path -> indented source text)."""
    return Project((path, path, textwrap.dedent(text).lstrip("\n")) for path, text in files.items())


def assert_views_match(proj: Project, files: Mapping[str, str]) -> None:
    """Each file analysed alone with its view finds what the project analysis finds (lines and codes)."""
    for path, text in files.items():
        alone = IncrementalAnalyzer(path).analyze(textwrap.dedent(text).lstrip("\n"), project=proj.view(path))
        assert {(f.span.line, f.code) for f in alone} == {(f.span.line, f.code) for f in proj.analyze(path)}, path
