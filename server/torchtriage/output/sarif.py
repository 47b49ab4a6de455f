"""``--format sarif``: SARIF 2.1.0 for code-scanning services (GitHub, GitLab, Azure).

Paths are relative to ``%SRCROOT%`` (the working directory) when they can be;
columns count Unicode code points, as our spans do.  Notebook findings carry
their cell in ``properties`` and no region: lines of an .ipynb's JSON are not
lines of its code.  Files that could not be checked become tool execution
notifications, so a scan is never silently incomplete.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any, Sequence
from urllib.parse import quote

from .. import __version__
from ..analysis.rules import Rule, all_rules
from ..checker import FileReport
from ..findings import INTERNAL_ERROR_CODE, SYNTAX_ERROR_CODE, Finding, Fix, Severity, Span
from . import register

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/torchtriage/torchtriage"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}

# Findings that are not rules of their own but still need a descriptor.
_BUILTIN = {
    SYNTAX_ERROR_CODE: ("syntax-error", "The file does not parse, so nothing else in it was checked."),
    INTERNAL_ERROR_CODE: ("internal-error", "A rule crashed on this file; the other rules still ran."),
}


def _artifact_location(path: str) -> dict[str, str]:
    pure = PurePath(path)
    if pure.is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(pure.as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }


def _rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(rule.why.split())},
        "help": {"text": rule.fix_description, "markdown": rule.explain()},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"category": rule.category, "requiresCuda": rule.requires_cuda},
    }


def _builtin_descriptor(code: str) -> dict[str, Any]:
    name, text = _BUILTIN.get(code, (code.lower(), code))
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": text},
        "defaultConfiguration": {"level": "error"},
    }


def _fix(finding: Finding, fix: Fix) -> dict[str, Any]:
    return {
        "description": {"text": f"{fix.title} ({fix.applicability.value})"},
        "artifactChanges": [
            {
                "artifactLocation": _artifact_location(finding.path),
                "replacements": [
                    {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.content}}
                    for edit in fix.edits
                ],
            }
        ],
    }


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": _artifact_location(finding.path)}
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": location}],
    }
    if finding.cell is None:
        location["region"] = _region(finding.span)
        if finding.fix is not None:
            result["fixes"] = [_fix(finding, finding.fix)]
    else:
        cell = finding.cell
        result["message"]["text"] = f"cell {cell.cell + 1}, line {cell.line}: {finding.message}"
        result["properties"] = {"cell": cell.to_json(), "column": finding.span.column}
    return result


def build_log(reports: Sequence[FileReport]) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict."""
    findings = [finding for report in reports for finding in report.findings]
    rules = {rule.code: rule for rule in all_rules()}
    descriptors = [_rule_descriptor(rule) for rule in rules.values()]
    extra = sorted({f.code for f in findings} - set(rules))
    descriptors.extend(_builtin_descriptor(code) for code in extra)
    index = {descriptor["id"]: position for position, descriptor in enumerate(descriptors)}
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{report.path}: {report.error}"},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact_location(report.path)}}],
        }
        for report in reports
        if report.error
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "torchtriage",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }
        },
        "invocations": [
            {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
        ],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index[f.code]) for f in findings],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(reports: Sequence[FileReport]) -> str:
    return json.dumps(build_log(reports), indent=2, ensure_ascii=False) + "\n"


register("sarif", render)
