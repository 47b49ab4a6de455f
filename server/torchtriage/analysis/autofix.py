"""Apply fixes to a whole source until nothing fixable is left (``--fix``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Settings
from ..findings import Finding
from .engine import IncrementalAnalyzer
from .fixes import apply_edits, select_fixes
from .project_view import ProjectView

MAX_ROUNDS = 10


@dataclass
class FixResult:
    """The fixed text, how many fixes went in, and what is left."""

    source: str
    applied: int = 0
    remaining: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.applied > 0


def fix_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
    unsafe: bool = False,
    project: ProjectView | None = None,
) -> FixResult:
    """Apply safe (and with ``unsafe``, all) fixes, re-analysing between rounds.

    Each round applies non-overlapping fixes only, so every edit is computed
    against the text it applies to; the loop stops when a round changes nothing.
    A round whose result no longer parses is rolled back.  Rounds after the first
    re-parse only what the fixes changed (:class:`.engine.IncrementalAnalyzer`).

    ``project``: what the rest of the file's project tells it (see :mod:`.project_view`),
    so that the fixes are those of the findings the language server shows.
    """
    analyzer = IncrementalAnalyzer(path)
    current = source
    applied = 0
    findings = analyzer.analyze(current, settings, project=project)
    for _ in range(MAX_ROUNDS):
        fixes = select_fixes(findings, unsafe)
        if not fixes:
            break
        candidate = apply_edits(current, [edit for fix in fixes for edit in fix.edits])
        if candidate == current:
            break
        new_findings = analyzer.analyze(candidate, settings, project=project)
        if any(f.code == "TT000" for f in new_findings) and not any(f.code == "TT000" for f in findings):
            break  # never turn a parsing file into a broken one
        current, findings = candidate, new_findings
        applied += len(fixes)
    return FixResult(current, applied, findings)
