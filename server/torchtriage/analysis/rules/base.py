"""What a rule is: code, name, docs, cases, and a ``check`` over a ModuleContext.

One rule per module in this package.  Each rule carries its own documentation
(``torchtriage explain`` prints it) and its own VALID / INVALID cases, which
the test-suite collects automatically.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterator

from ...findings import Applicability, Fix, Severity

if TYPE_CHECKING:
    from ..context import ModuleContext

# A fix is built lazily: only for findings that survive noqa and selection.
FixBuilder = Callable[[], "Fix | None"]


@dataclass(frozen=True)
class Report:
    """What a rule yields: where, what, and how to fix it."""

    node: ast.AST
    message: str
    fix: FixBuilder | None = None


@dataclass(frozen=True)
class Invalid:
    """A source that must produce findings of the rule.

    ``lines``: the 1-based lines the findings must be on (after dedent); when
    empty, any line is accepted but at least one finding is required.
    ``fixed``: when given, the source after applying this rule's fixes.
    ``device``: the device assumption to analyse under.
    ``findings``: when given, every finding exactly, in source order, as
    ``("line:column-end_line:end_column", message)`` (1-based, end exclusive).
    """

    source: str
    lines: tuple[int, ...] = ()
    fixed: str | None = None
    device: str = "auto"
    findings: tuple[tuple[str, str], ...] = ()

    @property
    def code(self) -> str:
        return textwrap.dedent(self.source).lstrip("\n")

    @property
    def fixed_code(self) -> str | None:
        return None if self.fixed is None else textwrap.dedent(self.fixed).lstrip("\n")


@dataclass(frozen=True)
class Valid:
    """A source that must produce no findings of the rule."""

    source: str
    device: str = "auto"

    @property
    def code(self) -> str:
        return textwrap.dedent(self.source).lstrip("\n")


class Rule:
    """Base class of every rule.  Subclasses set the class attributes and ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case
    severity: ClassVar[Severity] = Severity.WARNING
    category: ClassVar[str]  # host_sync | data_loading | memory | launch_overhead | compute | debugging
    requires_cuda: ClassVar[bool] = False
    summary: ClassVar[str]  # one sentence: what is flagged
    why: ClassVar[str]  # why it is slow, with the cost it causes
    fix_description: ClassVar[str]  # what the fix does
    fix_applicability: ClassVar[Applicability | None] = None  # None: no automatic fix
    example_bad: ClassVar[str] = ""
    example_good: ClassVar[str] = ""
    VALID: ClassVar[tuple[Valid | str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid | str, ...]] = ()

    def check(self, ctx: "ModuleContext") -> Iterator[Report]:
        raise NotImplementedError

    # --- helpers for subclasses -------------------------------------------

    @classmethod
    def valid_cases(cls) -> list[Valid]:
        return [case if isinstance(case, Valid) else Valid(case) for case in cls.VALID]

    @classmethod
    def invalid_cases(cls) -> list[Invalid]:
        return [case if isinstance(case, Invalid) else Invalid(case) for case in cls.INVALID]

    @classmethod
    def explain(cls) -> str:
        """The Markdown that ``torchtriage explain`` and LSP hover show."""
        fix = textwrap.dedent(cls.fix_description).strip()  # dedent first: multi-line descriptions
        if cls.fix_applicability is not None:
            fix += f" (automatic fix: {cls.fix_applicability.value})"
        parts = [
            f"# {cls.code} {cls.name}",
            f"**Severity:** {cls.severity.value}  ·  **Category:** {cls.category}"
            + ("  ·  CUDA files only" if cls.requires_cuda else ""),
            f"## What\n{cls.summary}",
            f"## Why\n{textwrap.dedent(cls.why).strip()}",
            f"## Fix\n{textwrap.dedent(fix).strip()}",
        ]
        if cls.example_bad:
            parts.append("## Example\n```python\n" + textwrap.dedent(cls.example_bad).strip() + "\n```")
        if cls.example_good:
            parts.append("Instead:\n```python\n" + textwrap.dedent(cls.example_good).strip() + "\n```")
        return "\n\n".join(parts) + "\n"
