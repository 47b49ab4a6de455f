"""Source text in, findings out: parse once, run the enabled rules, honour noqa.

Never raises on user input: a syntax error becomes one TT000 finding, a crash
inside one rule becomes a TT999 finding for that rule and the others still run.
"""

from __future__ import annotations

import ast
import re
import traceback
from typing import Iterable

from ..config import Settings
from ..findings import INTERNAL_ERROR_CODE, Finding, Severity, Span
from .context import ModuleContext
from .incremental.reparse import ParsedModule, parse_module, reparse
from .parsing import LEGACY_ASYNC, legacy_async_findings
from .project_view import ProjectView
from .rules import Rule, all_rules
from .rules.base import FixBuilder

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_NOQA = re.compile(r"^#\s*torchtriage\s*:\s*noqa\s*$", re.I | re.M)
_FILE_NOQA_PREFIX = re.compile(r"#\s*torchtriage", re.I)  # what every file noqa holds


def noqa_codes(line: str) -> frozenset[str] | None:
    """Codes suppressed on a line: None for none, empty set for a bare ``# noqa``."""
    if "noqa" not in line.lower():
        return None
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return frozenset()
    return frozenset(code.upper() for code in re.split(r"[\s,]+", codes) if code)


def is_suppressed(finding: Finding, lines: list[str]) -> bool:
    """Whether a ``# noqa`` on the finding's first or last line silences it."""
    for number in {finding.span.line, finding.span.end_line}:
        if 1 <= number <= len(lines):
            codes = noqa_codes(lines[number - 1])
            if codes is not None and (not codes or finding.code in codes):
                return True
    return False


def has_file_noqa(source: str) -> bool:
    """Whether a line of its own says ``# torchtriage: noqa`` (the whole file opts out).  A search
    for ``# torchtriage`` anywhere comes first: 15x faster than the line-anchored one on a
    73 kB file, and run on every edit."""
    return bool(_FILE_NOQA_PREFIX.search(source)) and bool(_FILE_NOQA.search(source))


def enabled_rules(settings: Settings, path: str | None = None) -> list[type[Rule]]:
    return [rule for rule in all_rules() if settings.is_enabled(rule.code, path)]


def _internal_error(path: str, rule: type[Rule], exc: BaseException) -> Finding:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    location = f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return Finding(
        path=path,
        span=Span(1, 1, 1, 1),
        code=INTERNAL_ERROR_CODE,
        name="internal-error",
        severity=Severity.ERROR,
        message=f"internal error in rule {rule.code} {rule.name}: {type(exc).__name__}: {exc}{location}; "
        "other rules still ran. Please report this file.",
    )


def analyze_context(
    ctx: ModuleContext, rules: Iterable[type[Rule]], deferred: dict[int, FixBuilder] | None = None
) -> list[Finding]:
    """Run rules over a prepared context; crashes become TT999 findings.

    ``deferred``: instead of building fixes, leave them off the findings and keep each
    finding's fix builder here (by ``id`` of the finding); see :meth:`IncrementalAnalyzer.build_fixes`.
    """
    findings: list[Finding] = []
    for rule_class in rules:
        if rule_class.requires_cuda and not ctx.uses_cuda:
            continue
        rule = rule_class()
        severity = ctx.settings.severity_for(rule.code, rule.severity)
        try:
            for report in rule.check(ctx):
                finding = Finding(
                    path=ctx.path,
                    span=ctx.span(report.node),
                    code=rule.code,
                    name=rule.name,
                    severity=severity,
                    message=report.message,
                )
                if is_suppressed(finding, ctx.lines):
                    continue
                finding = _explain_project_context(ctx, rule_class, report.node, finding)
                if report.fix is not None:
                    if deferred is None:
                        finding = finding.with_changes(fix=_build_fix(report.fix))
                    else:
                        deferred[id(finding)] = report.fix
                findings.append(finding)
        except Exception as exc:  # one broken rule must not hide the others
            findings.append(_internal_error(ctx.path, rule_class, exc))
    if "async" in ctx.source and any(getattr(n, "arg", None) == LEGACY_ASYNC for n in ctx.nodes_of((ast.keyword, ast.arg))):
        findings.extend(legacy_async_findings(ctx.tree, ctx.lines, ctx.path, ctx.span))  # ``async`` as a name (parsing.py)
    return findings


def hot_path_of(ctx: ModuleContext, node: ast.AST) -> tuple[str, ...]:
    """The per-step call sites in other files that make ``node`` hot (empty when its own file does)."""
    if not ctx.hot_entries:
        return ()
    hot = ctx.hot
    current: ast.AST | None = node
    while current is not None:
        region = hot.region_of(current)
        if region is not None:
            return region.hot_path
        current = ctx.parents.get(current)
    return ()


def _sentence(message: str) -> str:
    message = message.rstrip()
    return message if message.endswith((".", "!", "?")) else f"{message}."


def _explain_project_context(ctx: ModuleContext, rule: type[Rule], node: ast.AST, finding: Finding) -> Finding:
    """Say why a finding holds when the reason lies in another file: the per-step call path
    (``extra["hot_path"]``) and where the CUDA device came from (``extra["device_from"]``)."""
    extra: dict[str, object] = {}
    message = finding.message
    path = hot_path_of(ctx, node)
    if path:
        extra["hot_path"] = list(path)
        message = f"{_sentence(message)} Runs every step: called from {' → '.join(path)}."
    if rule.requires_cuda and not ctx.mentions_cuda and ctx.settings.device != "cuda":
        if ctx.cuda_from is not None:
            extra["device_from"] = ctx.cuda_from
            message = f"{_sentence(message)} CUDA is used by {ctx.cuda_from}, which imports this file."
        elif ctx.steps_on_cuda_in is not None:
            extra["device_from"] = ctx.steps_on_cuda_in
            message = f"{_sentence(message)} CUDA is used by {ctx.steps_on_cuda_in}, whose training step this file runs."
        elif ctx.cuda_caller is not None:
            extra["device_from"] = ctx.cuda_caller
            message = f"{_sentence(message)} CUDA is used by {ctx.cuda_caller}, whose step loop runs this code."
        elif ctx.loaders_on_cuda_in is not None:
            extra["device_from"] = ctx.loaders_on_cuda_in
            message = f"{_sentence(message)} CUDA is used by {ctx.loaders_on_cuda_in}, whose step loop copies this file's batches to it."
    if not extra:
        return finding
    return finding.with_changes(message=message, extra={**finding.extra, **extra})


def _build_fix(builder):  # type: ignore[no-untyped-def]
    try:
        return builder()
    except Exception:  # a fix that cannot be built is simply not offered
        return None


def analyze_parsed(
    parsed: ParsedModule,
    path: str = "<string>",
    settings: Settings | None = None,
    rules: Iterable[type[Rule]] | None = None,
    project: ProjectView | None = None,
    deferred: dict[int, FixBuilder] | None = None,
) -> list[Finding]:
    """All findings for an already parsed module (not opted out by a file noqa), sorted by position.

    ``project``: what the rest of the project tells this file (see :mod:`.project_view`);
    ``deferred``: see :func:`analyze_context`."""
    settings = settings or Settings()
    ctx = ModuleContext.from_view(parsed, path, settings, project)
    selected = list(rules) if rules is not None else enabled_rules(settings, path)
    findings = analyze_context(ctx, selected, deferred)
    # Helpers kept in the memo point back at ctx: let it go without the cycle collector (a
    # deferred fix builder that needs one builds it again).
    ctx.memo.clear()
    unique = {(f.code, f.span): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)


def analyze_source(
    source: str,
    path: str = "<string>",
    settings: Settings | None = None,
    rules: Iterable[type[Rule]] | None = None,
    top_level_await: bool = False,
) -> list[Finding]:
    """All findings for one module's source text, sorted by position."""
    return IncrementalAnalyzer(path, top_level_await).analyze(source, settings, rules)


class IncrementalAnalyzer:
    """Analyses successive versions of one document, re-parsing only the lines each edit touched.

    Gives exactly what :func:`analyze_source` gives for the same text.  Not thread-safe:
    one document's versions must be analysed one at a time.
    """

    def __init__(self, path: str = "<string>", top_level_await: bool = False) -> None:
        self.path = path
        self.top_level_await = top_level_await
        self._last: ParsedModule | None = None  # the last version that parsed
        # Fix builders of the last analysis with ``defer_fixes``, by ``id`` of its findings.
        self._deferred: dict[int, FixBuilder] = {}

    def parse(self, source: str) -> ParsedModule | Finding:
        """The new version's parse (from the last good one where possible), or its TT000."""
        last, self._last = self._last, None  # consumed: if anything below raises, start afresh next time
        if last is None or last.top_level_await != self.top_level_await:
            parsed = parse_module(source, self.path, self.top_level_await)
        else:
            parsed = reparse(last, source, self.path)
        # On a syntax error ``reparse`` has left the last good version intact: it stays the base.
        self._last = last if isinstance(parsed, Finding) else parsed
        return parsed

    def analyze(
        self,
        source: str,
        settings: Settings | None = None,
        rules: Iterable[type[Rule]] | None = None,
        project: ProjectView | None = None,
        defer_fixes: bool = False,
    ) -> list[Finding]:
        """All findings for this version of the document, sorted by position (``project``: the
        facts the rest of its project contributes, see :mod:`.project_view`).

        ``defer_fixes``: return the findings without their fixes, which need libcst (a cold
        import costs ~0.3 s) and are only wanted when the user asks for a code action;
        :meth:`build_fixes` adds them, and must be called before the next analysis (the
        builders read this version's syntax tree, which the next re-parse changes).
        """
        self._deferred = {}
        if has_file_noqa(source):
            return []  # before parsing: a file opted out of checks gets no syntax error either
        parsed = self.parse(source)
        if isinstance(parsed, Finding):
            return [parsed]  # always shown: nothing else can be checked
        findings = analyze_parsed(parsed, self.path, settings, rules, project, self._deferred if defer_fixes else None)
        if self._deferred:  # only the findings that survived de-duplication
            self._deferred = {id(f): self._deferred[id(f)] for f in findings if id(f) in self._deferred}
        return findings

    @property
    def has_deferred_fixes(self) -> bool:
        """Whether the last analysis left fixes to build (:meth:`build_fixes`)."""
        return bool(self._deferred)

    def has_fix(self, finding: Finding) -> bool:
        """Whether a finding of the last deferred analysis has a fix to build."""
        return finding.fix is not None or id(finding) in self._deferred

    def build_fixes(self, findings: list[Finding]) -> list[Finding]:
        """The findings of the last analysis (``defer_fixes``) with their fixes: exactly what
        the analysis gives without ``defer_fixes``."""
        deferred, self._deferred = self._deferred, {}
        return [
            finding.with_changes(fix=_build_fix(deferred[id(finding)])) if id(finding) in deferred else finding
            for finding in findings
        ]
