"""Every rule's own VALID / INVALID cases, collected automatically."""

from __future__ import annotations

import ast
import re

import pytest

from torchtriage.analysis import analyze_source, fix_source
from torchtriage.analysis.rules import Rule, all_rules
from torchtriage.config import Settings

RULES = all_rules()


def _settings(rule: type[Rule], device: str) -> Settings:
    return Settings(select=(rule.code,), device=device)


def _cases(kind: str):
    for rule in RULES:
        cases = rule.invalid_cases() if kind == "invalid" else rule.valid_cases()
        for index, case in enumerate(cases):
            yield pytest.param(rule, case, id=f"{rule.code}-{kind}-{index}")


@pytest.mark.parametrize(("rule", "case"), list(_cases("invalid")))
def test_invalid_case_is_flagged(rule, case):
    findings = [f for f in analyze_source(case.code, settings=_settings(rule, case.device)) if f.code == rule.code]
    assert findings, f"{rule.code} found nothing in:\n{case.code}"
    if case.lines:
        assert sorted(f.span.line for f in findings) == sorted(case.lines), findings
    if case.findings:
        spans = [(f"{s.line}:{s.column}-{s.end_line}:{s.end_column}", f.message) for s, f in sorted(
            ((f.span, f) for f in findings), key=lambda pair: pair[0])]
        assert spans == list(case.findings)
    for finding in findings:
        assert finding.message and finding.name == rule.name


@pytest.mark.parametrize(("rule", "case"), [p for p in _cases("invalid") if p.values[1].fixed is not None])
def test_invalid_case_fix(rule, case):
    settings = _settings(rule, case.device)
    result = fix_source(case.code, settings=settings, unsafe=True)
    assert result.source == case.fixed_code
    ast.parse(result.source)
    assert fix_source(result.source, settings=settings, unsafe=True).source == result.source


@pytest.mark.parametrize(("rule", "case"), list(_cases("valid")))
def test_valid_case_is_clean(rule, case):
    findings = [f for f in analyze_source(case.code, settings=_settings(rule, case.device)) if f.code == rule.code]
    assert not findings, f"false positive {findings} in:\n{case.code}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata(rule):
    assert re.fullmatch(r"TT\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.category in {"host_sync", "data_loading", "memory", "launch_overhead", "compute", "debugging"}
    assert rule.summary and rule.why.strip() and rule.fix_description
    assert len(rule.valid_cases()) >= 2 and len(rule.invalid_cases()) >= 2
    if rule.fix_applicability is not None:
        assert any(case.fixed is not None for case in rule.invalid_cases()), "a fixable rule shows its fix"
    explanation = rule.explain()
    assert rule.code in explanation and "## Why" in explanation and "## Fix" in explanation


def test_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)
