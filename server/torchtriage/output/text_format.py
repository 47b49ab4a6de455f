"""``--format text``: one line per finding, ruff style, then a summary."""

from __future__ import annotations

from typing import Sequence

from ..checker import FileReport
from ..findings import Applicability, Finding


def format_finding(finding: Finding) -> str:
    where = f"{finding.path}:{finding.span.line}:{finding.span.column}"
    if finding.cell is not None:
        where = f"{finding.path}:cell {finding.cell.cell + 1}:{finding.cell.line}:{finding.span.column}"
    marker = ""
    if finding.fix is not None:
        marker = " [*]" if finding.fix.applicability is Applicability.SAFE else " [-]"
    return f"{where}: {finding.code}{marker} {finding.message}"


def render(reports: Sequence[FileReport]) -> str:
    lines = [format_finding(f) for report in reports for f in report.findings]
    count = len(lines)
    safe = sum(
        1 for r in reports for f in r.findings if f.fix and f.fix.applicability is Applicability.SAFE
    )
    unsafe = sum(
        1 for r in reports for f in r.findings if f.fix and f.fix.applicability is Applicability.UNSAFE
    )
    if count:
        lines.append(f"Found {count} finding{'s' if count != 1 else ''}.")
        if safe:
            lines.append(f"[*] {safe} fixable with `torchtriage check --fix`.")
        if unsafe:
            lines.append(f"[-] {unsafe} more fixable with `--fix --unsafe-fixes`.")
    unchecked = sum(1 for r in reports if r.error)
    if unchecked:
        lines.append(f"{unchecked} file{'s' if unchecked != 1 else ''} could not be checked (reasons on stderr).")
    elif not count:
        lines.append("All checks passed!")
    return "\n".join(lines) + "\n"
