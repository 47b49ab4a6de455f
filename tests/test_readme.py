"""The README stays true: every rule is listed, and the report.json schema doc is the shipped one."""

from __future__ import annotations

import re
from pathlib import Path

from torchtriage.analysis.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_rule_is_in_the_rules_table() -> None:
    for rule in all_rules():
        row = re.search(rf"^\| `{rule.code}` \| {re.escape(rule.name)} \|.*$", README, re.M)
        assert row, f"{rule.code} {rule.name} missing from the README rules table"
        fix = {None: "", "safe": "[*]", "unsafe": "[-]"}[rule.fix_applicability.value if rule.fix_applicability else None]
        assert f"| {fix} | {rule.severity.value} |" in row.group(0)


def test_report_schema_doc_is_included_verbatim() -> None:
    doc = (ROOT / "server/torchtriage/runtime/report/REPORT_SCHEMA.md").read_text(encoding="utf-8")
    body = doc.split("\n", 1)[1].strip()
    assert body in README, "README's report.json section differs from runtime/REPORT_SCHEMA.md"


def test_the_two_setup_commands_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "make demo" in README and "make test" in README
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci/run").read_text(encoding="utf-8")
