"""Golden fix files: tests/fixtures/fixes/<CODE>/<case>.in.py -> <case>.out.py.

A case whose name contains ``unsafe`` is fixed with unsafe fixes enabled; the
others with safe fixes only.  Fixed output must parse, and fixing it again
must change nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchtriage.analysis import fix_source
from torchtriage.config import Settings

FIXTURES = Path(__file__).parents[2] / "fixtures" / "fixes"
CASES = sorted(FIXTURES.glob("TT*/*.in.py"))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}-{c.name[:-6]}" for c in CASES])
def test_golden_fix(case: Path) -> None:
    code = case.parent.name
    expected = case.with_name(case.name.replace(".in.py", ".out.py")).read_text(encoding="utf-8")
    settings = Settings(select=(code,), device="auto")
    unsafe = "unsafe" in case.name
    result = fix_source(case.read_text(encoding="utf-8"), str(case), settings, unsafe=unsafe)
    assert result.source == expected
    assert result.applied >= 1
    ast.parse(result.source)
    again = fix_source(result.source, str(case), settings, unsafe=unsafe)
    assert again.source == result.source, "fixing twice must change nothing"


def test_every_fix_kind_has_golden_files() -> None:
    from torchtriage.analysis.rules import all_rules

    fixable = {rule.code for rule in all_rules() if rule.fix_applicability is not None}
    with_goldens = {case.parent.name for case in CASES}
    assert fixable <= with_goldens, f"fixable rules without golden files: {sorted(fixable - with_goldens)}"
