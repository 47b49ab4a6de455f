"""The fixes ``fix --verify`` tries: each one an edit of the script, measured on its own.

Two sources, one shape (:class:`Candidate`):

- static: every finding of the script that carries a quick fix, safe or unsafe,
  exactly as ``torchtriage check`` gives it (the script analysed within its
  project, under the project's ``[tool.torchtriage]`` settings);
- runtime: the advice of the baseline profile that has a mechanical edit
  (:mod:`torchtriage.analysis.loader_edits`: the loader's workers when the run waits for data).

Two candidates that would write the same text are measured once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ...analysis.fixes import apply_edits
from ...findings import INTERNAL_ERROR_CODE, SYNTAX_ERROR_CODE, Applicability, Edit
from ...analysis.loader_edits import loader_worker_edits


@dataclass(frozen=True)
class Candidate:
    """One fix to measure: what it repairs, where, and the text of the script with it."""

    code: str  # the finding's rule code (TT302...) or the runtime finding's (TTR302)
    line: int  # the line the finding points at, 1-based
    title: str  # what the fix does, as the quick fix is titled
    source: str  # "static" or "runtime"
    applicability: str  # "safe" or "unsafe"
    edits: tuple[Edit, ...]
    text: str  # the whole script with this fix applied

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code, "line": self.line, "title": self.title, "source": self.source,
            "applicability": self.applicability, "edits": [e.to_json() for e in self.edits],
        }


def static_candidates(script: Path, original: str) -> list[Candidate]:
    """The quick fixes ``torchtriage check`` offers for the script (its project and settings)."""
    from ...checker import check_project_paths
    from ...config import load_settings

    settings, _ = load_settings(script.parent)
    reports = check_project_paths([script], settings, jobs=1)
    found = []
    for report in reports:
        if Path(report.path).resolve() != script.resolve():
            continue
        for finding in report.findings:
            fix = finding.fix
            if fix is None or finding.code in (SYNTAX_ERROR_CODE, INTERNAL_ERROR_CODE):
                continue
            text = apply_edits(original, fix.edits)
            found.append(Candidate(finding.code, finding.span.line, fix.title, "static", fix.applicability.value,
                                   tuple(fix.edits), text))
    return found


def runtime_candidates(script: Path, original: str, kinds: Iterable[str], workers: int, cuda: bool) -> list[Candidate]:
    """The baseline profile's advice that edits the script mechanically: with ``data_loading`` among its
    verdicts (``kinds``), ``workers`` loader workers for each DataLoader that has fewer."""
    if "data_loading" not in set(kinds):
        return []
    return [Candidate("TTR302", line, title, "runtime", Applicability.SAFE.value, edits, apply_edits(original, edits))
            for line, title, edits in loader_worker_edits(original, str(script), workers, cuda)]


def distinct(candidates: Iterable[Candidate], original: str) -> list[Candidate]:
    """Candidates in order, without those that change nothing or repeat an earlier one's text."""
    seen = {original}
    out = []
    for candidate in candidates:
        if candidate.text in seen:
            continue
        seen.add(candidate.text)
        out.append(candidate)
    return out
