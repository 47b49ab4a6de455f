"""What a rule is: code, name, docs, cases, and a ``check`` over a :class:`RuleContext`.

One rule per module in this package.  Each rule carries its own documentation
(``torchtriage explain`` prints it) and its own VALID / INVALID cases, which
the test-suite collects automatically.

What a rule may read of the module it checks is :class:`RuleContext`, the part of
:class:`..context.ModuleContext` rules use; the context is built before any rule runs
and a rule never changes it (``ctx.memo`` is the per-analysis scratch space).  A rule
that keeps a result on a syntax node, so that it survives edits elsewhere in the file
(:func:`..incremental.memo.subtree_memo`, :func:`..incremental.memo.keyed_memo`),
must follow the memo contract written in :mod:`..incremental.memo`: the result depends
on the node's subtree only, or its key holds what else it read (``ctx.aliases_key``
for names resolved through the imports, ``node.lineno`` for positions), it holds no
reference to the node itself, and nobody changes it.  The incremental random-edit
tests catch a rule that breaks it.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterator, Protocol

from ...findings import Applicability, Fix, Severity, Span

if TYPE_CHECKING:
    from ..defaults import Default
    from ..hotloops.finder import HotEntry, HotLoops
    from ..project_view import LoaderRead, ReturnedLoader

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# A fix is built lazily: only for findings that survive noqa and selection.
FixBuilder = Callable[[], "Fix | None"]


class RuleContext(Protocol):
    """What a rule may read of the module it checks (a :class:`..context.ModuleContext` is one).

    Every member is safe to read anywhere in a rule: the syntax facts of this parse, and
    per-analysis values (the hot loops, the device, what other project files say).  Inside
    a result kept on a node only what the memo contract allows (see the module docstring).
    Rules do not see the settings, the incremental parse and what it carries between
    versions, or how the project facts were found (``cuda_from``, ``path_label`` ...): the
    engine applies those.
    """

    # --- the module's syntax index (:class:`..module_index.ModuleIndex`) -------------------

    @property
    def source(self) -> str: ...

    @property
    def tree(self) -> ast.Module: ...

    @property
    def path(self) -> str: ...

    @property
    def lines(self) -> list[str]: ...

    @property
    def parents(self) -> dict[ast.AST, ast.AST]: ...

    @property
    def functions(self) -> dict[str, list[FunctionNode]]: ...

    @property
    def aliases(self) -> dict[str, str]: ...

    @property
    def aliases_key(self) -> tuple[tuple[str, str], ...]:
        """The imports as a key, for results kept on a node that resolve names (``qualname``)."""
        ...

    def nodes_of(self, types: type | tuple[type, ...]) -> tuple[ast.AST, ...]: ...

    def dotted(self, node: ast.AST) -> str | None: ...

    def qualname(self, node: ast.AST) -> str | None: ...

    def call_qualname(self, node: ast.AST) -> str | None: ...

    def names_ending_in(self, lasts: frozenset[str]) -> frozenset[str]: ...

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]: ...

    def enclosing_function(self, node: ast.AST) -> FunctionNode | None: ...

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None: ...

    def enclosing_statement(self, node: ast.AST) -> ast.stmt | None: ...

    def segment(self, node: ast.AST) -> str: ...

    def span(self, node: ast.AST) -> Span: ...

    def char_column(self, lineno: int, byte_offset: int) -> int: ...

    # --- this analysis ---------------------------------------------------------------------

    @property
    def memo(self) -> dict[object, object]:
        """Per-analysis results of rule helpers, by key (gone after this analysis)."""
        ...

    @property
    def hot(self) -> HotLoops:
        """The step loops and per-step functions of this module."""
        ...

    @property
    def own_hot(self) -> HotLoops:
        """The module's loops as if it took part in training (differs from ``hot`` only in a script
        beside the training code: an evaluation script's loops are TT501's to judge)."""
        ...

    @property
    def uses_cuda(self) -> bool: ...

    # --- what other project files tell this one (see :mod:`..project_view`) ----------------

    @property
    def hot_entries(self) -> tuple[HotEntry, ...]: ...

    @property
    def loader_reads(self) -> tuple[LoaderRead, ...]: ...

    @property
    def trains_via(self) -> str | None: ...

    @property
    def auxiliary(self) -> str | None:
        """Why this file takes no part in training (a script beside it: :mod:`..project.roles`), else None."""
        ...

    @property
    def loader_classes(self) -> frozenset[str]:
        """Names this file imports that are project subclasses of torch's DataLoader (``DataLoaderX``)."""
        ...

    @property
    def returned_loaders(self) -> tuple[ReturnedLoader, ...]:
        """Loaders this file's factories return that a caller iterates every epoch (:mod:`..project.returned_loaders`)."""
        ...

    @property
    def training_loops(self) -> frozenset[int]:
        """Lines of this file's step loops that train through another file's function (:mod:`..project.links`)."""
        ...

    @property
    def trainer_calls(self) -> frozenset[str]:
        """Names of this file's functions that a training file calls (``get_optimizer(cfg, model)``)."""
        ...

    @property
    def syncing_imports(self) -> frozenset[str]:
        """Imported names of other project files' functions whose own body waits for the device (:mod:`..project.links`)."""
        ...

    @property
    def iterable_datasets(self) -> frozenset[str]:
        """Names this file imports that are project subclasses of torch's IterableDataset (:mod:`..project.returned_loaders`)."""
        ...

    @property
    def batch_movers(self) -> frozenset[str]:
        """Called names of other project files' functions that copy the step data handed to them to a device (:mod:`..project.batch_movers`)."""
        ...

    @property
    def precision_from(self) -> str | None:
        """A project file that imports this one and chooses the precision (:mod:`..project.precision`)."""
        ...

    @property
    def run_once(self) -> frozenset[str]:
        """Names of this file's functions the project runs once, outside every loop (:mod:`..project.run_once`)."""
        ...

    @property
    def forward_reached(self) -> frozenset[str]:
        """Names of this file's classes and functions another file's forward code builds or calls every pass (:mod:`..project.forward_reached`)."""
        ...

    @property
    def imported(self) -> bool:
        """Whether other project files import this one (its ``__main__`` block is then a self-test or demo)."""
        ...

    def attribute_default(self, attr: str) -> Default | None: ...

    def constant_default(self, name: str) -> Default | None: ...


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
    """Base class of every rule.  Subclasses set the class attributes and ``check``, which reads
    the module through :class:`RuleContext` and keeps results on nodes only as the memo
    contract allows (see the module docstring and :mod:`..incremental.memo`)."""

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

    def check(self, ctx: RuleContext) -> Iterator[Report]:
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
