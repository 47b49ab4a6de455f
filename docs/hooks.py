"""MkDocs hook (``hooks:`` in mkdocs.yml): pages generated at build time from the package itself.

* ``reference/findings-json.md`` and ``reference/{report,compare,lab,verify}-schema.md``: the contract
  documents that ship in the package beside the code that writes them (``server/torchtriage/output/``,
  ``server/torchtriage/runtime/<stage>/``).  They exist once, there; this hook reads them when the
  site is built, so the site never holds a copy that could drift.
* ``reference/rules.md``: every static rule from ``torchtriage.analysis.rules.all_rules()`` with the
  text ``torchtriage explain CODE`` prints, and the runtime finding codes (``RUNTIME_CODES`` in
  ``runtime/diagnosis/crosslink.py``) with the "raised when" column of REPORT_SCHEMA.md's table.

Plain Python on MkDocs >= 1.6 (``File.generated``); no plugin to install.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"
RUNTIME = SERVER / "torchtriage" / "runtime"

# generated page -> (source document, page title)
SCHEMAS = {
    "reference/findings-json.md": (SERVER / "torchtriage" / "output" / "FINDINGS_SCHEMA.md", "Findings JSON"),
    "reference/report-schema.md": (RUNTIME / "report" / "REPORT_SCHEMA.md", "report.json"),
    "reference/compare-schema.md": (RUNTIME / "compare" / "COMPARE_SCHEMA.md", "compare.json"),
    "reference/lab-schema.md": (RUNTIME / "lab" / "LAB_SCHEMA.md", "lab.json"),
    "reference/verify-schema.md": (RUNTIME / "verify" / "VERIFY_SCHEMA.md", "verify.json"),
}
FIX_MARK = {"safe": "safe", "unsafe": "unsafe"}
TTR_ROW = re.compile(r"^\| `(TTR\d{3})` \| `([a-z0-9-]+)` \| (.*) \|\s*$")


def _schema_page(source: Path, title: str) -> str:
    relative = source.relative_to(ROOT).as_posix()
    return (
        f"# {title}\n\n"
        f"*Generated at build time from `{relative}`, the one copy of this contract. "
        "Edit that file, not this page.*\n\n" + source.read_text(encoding="utf-8")
    )


def _import_rules():
    if str(SERVER) not in sys.path:
        sys.path.insert(0, str(SERVER))
    from torchtriage.analysis.rules import all_rules
    from torchtriage.runtime.diagnosis.crosslink import RUNTIME_CODES

    return all_rules(), RUNTIME_CODES


def _explain_body(rule) -> str:
    """``rule.explain()`` without its title line, its ``## What``-style headings made bold labels."""
    lines = rule.explain().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    out, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            line = f"**{line[3:].strip()}**"
        out.append(line)
    return "\n".join(out).strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _runtime_texts() -> dict[str, str]:
    texts = {}
    for line in (RUNTIME / "report" / "REPORT_SCHEMA.md").read_text(encoding="utf-8").splitlines():
        match = TTR_ROW.match(line)
        if match:
            texts[match.group(1)] = match.group(3)
    return texts


def _rules_page() -> str:
    rules, runtime_codes = _import_rules()
    parts = [
        "# Rules",
        "",
        "*Generated at build time from the rule classes (`torchtriage.analysis.rules.all_rules()`); "
        "each section is what `torchtriage explain CODE` prints. `torchtriage rules` lists the same rules.*",
        "",
        "Fix: *safe* fixes are applied by `--fix`; *unsafe* ones (they change behaviour slightly, "
        "e.g. log every 100 steps instead of every step) need `--fix --unsafe-fixes`. "
        "Device *cuda*: the rule fires only in files that use CUDA "
        "(see [Hot loops](../guides/check.md#device-awareness)).",
        "",
        "## Static rules",
        "",
        "| code | name | fix | severity | device | category | what |",
        "|---|---|---|---|---|---|---|",
    ]
    for rule in rules:
        fix = FIX_MARK.get(rule.fix_applicability.value, "") if rule.fix_applicability else ""
        device = "cuda" if rule.requires_cuda else "any"
        parts.append(
            f"| [`{rule.code}`](#{rule.code.lower()}) | {rule.name} | {fix} | {rule.severity.value} "
            f"| {device} | {rule.category} | {_cell(rule.summary)} |"
        )
    for rule in rules:
        parts += ["", f"### {rule.code} {rule.name} {{#{rule.code.lower()}}}", "", _explain_body(rule)]
    texts = _runtime_texts()
    parts += [
        "",
        "## Runtime findings",
        "",
        "Raised by runtime runs (`torchtriage profile`, `torchtriage analyze`), never by "
        "`torchtriage check`: hazards a profile or a trace shows on a line. Codes and names come from "
        "`RUNTIME_CODES` (`runtime/diagnosis/crosslink.py`), the conditions from the runtime finding table of "
        "[report.json](report-schema.md), which also gives their severities and `details`.",
        "",
        "| code | name | raised when |",
        "|---|---|---|",
    ]
    for code, name in runtime_codes.items():
        parts.append(f"| <span id=\"{code.lower()}\"></span>`{code}` | {name} | {texts.get(code, '')} |")
    return "\n".join(parts) + "\n"


def on_files(files: Files, config) -> Files:
    for uri, (source, title) in SCHEMAS.items():
        files.append(File.generated(config, uri, content=_schema_page(source, title)))
    files.append(File.generated(config, "reference/rules.md", content=_rules_page()))
    return files
