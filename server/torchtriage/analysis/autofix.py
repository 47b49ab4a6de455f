"""Apply fixes to a whole source until nothing fixable is left (``--fix``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Settings
from ..findings import Finding
from .engine import analyze_source
from .fixes import apply_edits, select_fixes

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
) -> FixResult:
    """Apply safe (and with ``unsafe``, all) fixes, re-analysing between rounds.

    Each round applies non-overlapping fixes only, so every edit is computed
    against the text it applies to; the loop stops when a round changes nothing.
    A round whose result no longer parses is rolled back.
    """
    current = source
    applied = 0
    findings = analyze_source(current, path, settings)
    for _ in range(MAX_ROUNDS):
        fixes = select_fixes(findings, unsafe)
        if not fixes:
            break
        candidate = apply_edits(current, [edit for fix in fixes for edit in fix.edits])
        if candidate == current:
            break
        new_findings = analyze_source(candidate, path, settings)
        if any(f.code == "TT000" for f in new_findings) and not any(f.code == "TT000" for f in findings):
            break  # never turn a parsing file into a broken one
        current, findings = candidate, new_findings
        applied += len(fixes)
    return FixResult(current, applied, findings)
