"""The static findings a run's report links: the script's and its hot files', checked as the program that ran.

Light on purpose: it loads the linter only when asked to check, and no runtime module, so that the
helper process that checks for ``analyze`` (``static_helper``) starts quickly.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Sequence

from ...findings import INTERNAL_ERROR_CODE, SYNTAX_ERROR_CODE, Finding

if TYPE_CHECKING:
    from ..results.profile_data import ProfileData

HOT_FILES = 10  # static findings are looked up in the script and at most this many hot files


def static_findings(profile: "ProfileData", skip: Collection[str] = ()) -> list[Finding]:
    """Static findings for the script and the user files among the hot lines, as ``torchtriage check``
    gives them: each file analysed within the part of its project the run executed (the files and
    what they import), with the project's ``[tool.torchtriage]`` settings (the nearest pyproject.toml
    above the script).  Paths come back absolute.
    ``skip``: files the host analyses another way (a notebook's cells), left out here."""
    return findings_in(hot_files(profile, skip))


def hot_files(profile: "ProfileData", skip: Collection[str] = ()) -> list[Path]:
    """The files :func:`static_findings` checks: the script, then the files of the hot lines (Python
    files that exist, not in ``skip``, at most ``HOT_FILES`` of them)."""
    files = [profile.script] + [line.path for line in profile.lines]
    base = Path(profile.cwd or ".")
    skipped = {os.path.realpath(base / p) for p in skip}
    paths = [base / p for p in dict.fromkeys(p for p in files if p)]
    return [p for p in paths if p.suffix == ".py" and p.is_file() and os.path.realpath(p) not in skipped][:HOT_FILES]


def findings_in(paths: Sequence[Path]) -> list[Finding]:
    """The static findings of ``paths`` checked as the program that ran (see :func:`static_findings`), each
    carrying its rule's ``category`` and ``requires_cuda`` in ``extra``: the report's diagnosis reads them
    there, without loading the rule registry in its own process."""
    from ...analysis.rules import all_rules
    from ...checker import check_project_paths  # the linter loads only once a run has lines to link
    from ...config import load_settings

    if not paths:
        return []
    settings, _ = load_settings(paths[0].parent)
    try:
        reports = check_project_paths(paths, settings, jobs=1, imported_only=True, fixes=False)  # the program that ran
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []
    here = Path.cwd()  # the checker names files relative to this process's folder
    rules = {rule.code: rule for rule in all_rules()}
    return [dataclasses.replace(f, path=str((here / f.path).resolve()), extra={**f.extra, **_rule_facts(rules.get(f.code))})
            for report in reports for f in report.findings if f.code not in (SYNTAX_ERROR_CODE, INTERNAL_ERROR_CODE)]


def _rule_facts(rule: Any) -> dict[str, Any]:
    """What the diagnosis needs of a finding's rule (none for a code no rule has)."""
    return {} if rule is None else {"category": rule.category, "requires_cuda": bool(rule.requires_cuda)}
