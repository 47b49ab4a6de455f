"""``--format sarif`` (validated against the official 2.1.0 schema) and ``--format github``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from cli_helpers import TRAIN_CUDA, write

from torchtriage.checker import FileReport
from torchtriage.findings import Finding, Severity, Span
from torchtriage.output import FORMATTERS
from torchtriage.output.github import escape_data, escape_property, render

SCHEMA = json.loads((Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": TRAIN_CUDA.lstrip("\n")},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _validate(log: dict) -> None:
    validator_class = jsonschema.validators.validator_for(SCHEMA)
    validator_class.check_schema(SCHEMA)
    errors = sorted(validator_class(SCHEMA).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_formats_are_registered() -> None:
    assert {"text", "json", "sarif", "github"} <= set(FORMATTERS)


def test_the_parser_offers_every_registered_format_without_loading_the_linter() -> None:
    """``--format``'s choices are written out in cli/check.py so that building the parser (for any
    command: ``analyze``, ``lsp``) loads no rule, checker or formatter; they must name the formats."""
    import subprocess
    import sys

    from torchtriage.cli.check import FORMAT_NAMES

    assert sorted(FORMAT_NAMES) == sorted(FORMATTERS)
    probe = ("import sys; from torchtriage.cli import build_parser; build_parser(); "
             "print(sorted(m for m in sys.modules if m.startswith(('torchtriage.analysis', 'torchtriage.checker', 'torchtriage.output'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_sarif_validates_and_carries_rules_results_fixes(tt, tmp_path: Path) -> None:
    write(tmp_path / "src" / "train.py", TRAIN_CUDA)
    write(tmp_path / "src" / "broken.py", "import torch\ndef f(:\n")
    (tmp_path / "src" / "nb.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (tmp_path / "src" / "latin1.py").write_bytes(b"import torch # \xe9\n")
    result = tt("check", "--format", "sarif", "--select", "TT301", "src")
    assert result.returncode == 1
    log = json.loads(result.stdout)
    _validate(log)
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchtriage"
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert rules["TT301"]["name"] == "blocking-host-to-device-copy"
    assert rules["TT301"]["defaultConfiguration"]["level"] == "warning"
    assert rules["TT301"]["shortDescription"]["text"] and rules["TT301"]["fullDescription"]["text"]
    assert "TT000" in rules  # syntax errors have a descriptor too
    by_uri = {}
    for res in run["results"]:
        location = res["locations"][0]["physicalLocation"]
        by_uri.setdefault(location["artifactLocation"]["uri"], []).append(res)
        assert location["artifactLocation"].get("uriBaseId") == "%SRCROOT%"
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
    [py] = by_uri["src/train.py"]
    region = py["locations"][0]["physicalLocation"]["region"]
    assert (py["ruleId"], py["level"]) == ("TT301", "warning")
    assert region == {"startLine": 4, "startColumn": 9, "endLine": 4, "endColumn": 21}
    replacement = py["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "x.to(device, non_blocking=True)"
    [syntax] = by_uri["src/broken.py"]
    assert (syntax["ruleId"], syntax["level"]) == ("TT000", "error")
    [cell] = by_uri["src/nb.ipynb"]
    assert cell["properties"]["cell"] == {"cell": 0, "line": 4, "end_line": 4}
    assert "region" not in cell["locations"][0]["physicalLocation"]
    [notification] = run["invocations"][0]["toolExecutionNotifications"]
    assert "latin1.py" in notification["message"]["text"]
    assert run["invocations"][0]["executionSuccessful"] is False


def test_sarif_without_findings_validates(tt, tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "import torch\n")
    result = tt("check", "--format", "sarif", "ok.py")
    assert result.returncode == 0
    log = json.loads(result.stdout)
    _validate(log)
    assert log["runs"][0]["results"] == []


def test_github_annotations(tt, tmp_path: Path) -> None:
    write(tmp_path / "train.py", TRAIN_CUDA)
    result = tt("check", "--format", "github", "--select", "TT301", "train.py")
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith(
        "::warning file=train.py,line=4,endLine=4,col=9,endColumn=21,title=TT301 blocking-host-to-device-copy::"
    )
    assert "non_blocking=True" in line


def test_github_escaping() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\n") == "a%3Ab%2Cc%25d%0A"
    finding = Finding(
        path="dir,with:odd/f.py",
        span=Span(2, 3, 2, 7),
        code="TT101",
        name="host-sync-in-step",
        severity=Severity.INFO,
        message="line one\nline two: 100%",
    )
    out = render([FileReport("dir,with:odd/f.py", [finding])])
    assert out == (
        "::notice file=dir%2Cwith%3Aodd/f.py,line=2,endLine=2,col=3,endColumn=7,"
        "title=TT101 host-sync-in-step::line one%0Aline two: 100%25\n"
    )


@pytest.mark.parametrize("severity,level", [(Severity.ERROR, "error"), (Severity.INFO, "note")])
def test_sarif_levels_follow_finding_severity(severity: Severity, level: str) -> None:
    from torchtriage.output.sarif import build_log

    finding = Finding("a.py", Span(1, 1, 1, 2), "TT301", "blocking-host-to-device-copy", severity, "m")
    log = build_log([FileReport("a.py", [finding])])
    _validate(log)
    assert log["runs"][0]["results"][0]["level"] == level
