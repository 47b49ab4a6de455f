"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

``::warning file=F,line=L,endLine=E,col=C,endColumn=D,title=TT301 name::message``.
Messages escape ``%``, CR and LF; property values also escape ``:`` and ``,``
(the runner's own escaping rules).  Notebook findings annotate the file and
name the cell in the message; files that could not be checked become errors.
"""

from __future__ import annotations

from typing import Sequence

from ..checker import FileReport
from ..findings import Finding, Severity
from . import register

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: dict[str, object], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{kind} {props}::{escape_data(message)}"


def format_finding(finding: Finding) -> str:
    properties: dict[str, object] = {"file": finding.path}
    message = finding.message
    if finding.cell is None:
        span = finding.span
        properties.update(line=span.line, endLine=span.end_line, col=span.column, endColumn=span.end_column)
    else:
        message = f"cell {finding.cell.cell + 1}, line {finding.cell.line}: {message}"
    properties["title"] = f"{finding.code} {finding.name}"
    return _command(COMMANDS[finding.severity], properties, message)


def render(reports: Sequence[FileReport]) -> str:
    lines = []
    for report in reports:
        if report.error:
            lines.append(_command("error", {"file": report.path, "title": "torchtriage"}, report.error))
        lines.extend(format_finding(finding) for finding in report.findings)
    return "".join(line + "\n" for line in lines)


register("github", render)
