"""``torchtriage check | fix | rules | explain``: flags -> Settings -> the core's findings, printed.

No analysis happens here.  Exit codes: 0 clean, 1 findings, 2 usage or internal error.

A file that cannot be checked (unreadable, not UTF-8, binary, over 10 MiB, a
notebook that is not valid JSON) is named on stderr, skipped, and counts like
a finding: exit 1 unless ``--exit-zero`` (ruff does the same with E902), so a
CI run is never green while silently checking less than it was asked to.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..config import DEVICE_CHOICES, Settings, load_settings
from ..errors import UsageError
from . import verify

if TYPE_CHECKING:
    from ..checker import FileReport

# The linter (rules, checker, output formats) loads only when a command below runs: the
# parser is built for every command, and ``analyze`` or ``lsp`` need none of it to start.
FORMAT_NAMES = ("github", "json", "sarif", "text")  # output/: one module per format

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> list[str]:
    return [code.strip().upper() for code in value.split(",") if code.strip()]


def _add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="files, folders or notebooks")
    parser.add_argument("--select", type=_codes, help="only these codes or prefixes (e.g. TT1,TT301)")
    parser.add_argument("--extend-select", type=_codes, help="add codes to the configured selection")
    parser.add_argument("--ignore", type=_codes, help="skip these codes or prefixes")
    parser.add_argument("--format", choices=FORMAT_NAMES, default="text", dest="output_format")
    parser.add_argument("--statistics", action="store_true", help="count findings per rule")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a diff, change nothing")
    parser.add_argument("--device", choices=DEVICE_CHOICES, help="assume this device (default: auto-detect)")
    parser.add_argument("--no-config", action="store_true", help="ignore pyproject.toml settings")
    parser.add_argument("--output-file", "-o", type=Path, help="write the report here instead of stdout")


def _settings_from_args(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if not args.no_config:
        start = args.paths[0] if args.paths else Path(".")
        settings, problems = load_settings(start if start.exists() else Path("."))
        for problem in problems:
            print(f"torchtriage: warning: {problem}", file=sys.stderr)
    changes: dict[str, object] = {}
    if args.select:
        changes["select"] = tuple(args.select)
    if args.extend_select:
        changes["extend_select"] = settings.extend_select + tuple(args.extend_select)
    if args.ignore:
        changes["ignore"] = settings.ignore + tuple(args.ignore)
    if args.device:
        changes["device"] = args.device
    return settings.with_changes(**changes)


def _statistics(reports: Sequence[FileReport]) -> str:
    from ..analysis.rules import rule_by_code
    from ..findings import Applicability

    counts = collections.Counter(f.code for r in reports for f in r.findings)
    lines = []
    for code, count in counts.most_common():
        rule = rule_by_code(code)
        fixable = rule is not None and rule.fix_applicability is not None
        marker = "[*]" if fixable and rule.fix_applicability is Applicability.SAFE else "[-]" if fixable else "   "
        lines.append(f"{count:>5}  {code}  {marker} {rule.name if rule else code.lower()}")
    return "\n".join(lines) + ("\n" if lines else "")


def _diff(reports: Sequence[FileReport]) -> str:
    chunks = []
    for report in reports:
        if report.new_text is None:
            continue
        old = Path(report.path).read_text(encoding="utf-8-sig")
        chunks.extend(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                report.new_text.splitlines(keepends=True),
                fromfile=f"a/{report.path.lstrip('/')}",
                tofile=f"b/{report.path.lstrip('/')}",
            )
        )
    return "".join(chunks)


def run_check(args: argparse.Namespace) -> int:
    from ..checker import check_paths, write_fixes
    from ..findings import INTERNAL_ERROR_CODE
    from ..output import FORMATTERS

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    settings = _settings_from_args(args)
    fixing = args.fix or args.diff
    reports = check_paths(args.paths, settings, fix=fixing, unsafe=args.unsafe_fixes)
    for report in reports:
        if report.error:
            print(f"torchtriage: {report.path}: {report.error}", file=sys.stderr)
    out = args.output_file.open("w", encoding="utf-8") if args.output_file else sys.stdout
    try:
        if args.diff:
            out.write(_diff(reports))
            changed = sum(1 for r in reports if r.new_text is not None)
            print(f"Would fix {sum(r.fixed for r in reports)} finding(s) in {changed} file(s).", file=sys.stderr)
            return EXIT_FINDINGS if changed and not args.exit_zero else EXIT_CLEAN
        if args.fix:
            written = write_fixes(reports)
            fixed = sum(r.fixed for r in reports)
            if fixed:
                print(f"Fixed {fixed} finding(s) in {written} file(s).", file=sys.stderr)
        out.write(_statistics(reports) if args.statistics else FORMATTERS[args.output_format](reports))
    finally:
        if out is not sys.stdout:
            out.close()
    findings = [f for r in reports for f in r.findings]
    if any(f.code == INTERNAL_ERROR_CODE for f in findings):
        return EXIT_ERROR
    unchecked = any(r.error for r in reports)
    return EXIT_FINDINGS if (findings or unchecked) and not args.exit_zero else EXIT_CLEAN


def run_rules(args: argparse.Namespace) -> int:
    from ..analysis.rules import all_rules
    from ..findings import Applicability

    rules = all_rules()
    if args.output_format == "json":
        print(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "severity": r.severity.value,
                        "category": r.category,
                        "requires_cuda": r.requires_cuda,
                        "summary": r.summary,
                        "fix": r.fix_applicability.value if r.fix_applicability else None,
                    }
                    for r in rules
                ],
                indent=2,
            )
        )
        return EXIT_CLEAN
    width = max(len(r.name) for r in rules)
    for rule in rules:
        fix = {Applicability.SAFE: "[*]", Applicability.UNSAFE: "[-]", None: "   "}[rule.fix_applicability]
        cuda = "cuda" if rule.requires_cuda else "    "
        print(f"{rule.code}  {fix} {rule.name:<{width}}  {rule.severity.value:<7} {cuda}  {rule.summary}")
    print("\n[*] safe fix  [-] unsafe fix  cuda: only in files that use CUDA")
    return EXIT_CLEAN


def run_explain(args: argparse.Namespace) -> int:
    from ..analysis.rules import rule_by_code

    rule = rule_by_code(args.code)
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; `torchtriage rules` lists them")
    print(rule.explain(), end="")
    return EXIT_CLEAN


def _run_fix(args: argparse.Namespace) -> int:
    """``fix``: apply the fixes, or with ``--verify`` measure them first (cli/verify.py)."""
    return verify.run_verify(args) if args.verify else run_check(args)


def register(sub: Any) -> None:
    """Add check, fix, rules and explain to the top-level subparsers."""
    check = sub.add_parser("check", help="check files, folders and notebooks for hot-loop hazards")
    _add_check_arguments(check)
    check.set_defaults(handler=run_check)
    fix = sub.add_parser("fix", help="same as `check --fix`; with --verify SCRIPT, measure each fix on runs of the script")
    _add_check_arguments(fix)
    verify.add_arguments(fix)
    fix.set_defaults(handler=_run_fix, fix=True)
    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    rules.set_defaults(handler=run_rules)
    explain = sub.add_parser("explain", help="what a rule flags, why it is slow, and the fix")
    explain.add_argument("code", help="a rule code such as TT101, or its name")
    explain.set_defaults(handler=run_explain)
