"""The regions of a module that run once per training/eval step, and how rules ask about them.

Produced by :func:`.hotloops.find_hot_loops`; kept apart so the rules and the
project model share the types without the finder.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, TypeVar

Loop = ast.For | ast.AsyncFor | ast.While
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
T = TypeVar("T", bound=ast.AST)


@dataclass(eq=False)
class HotRegion:
    """A piece of code that runs once per step: a step loop or a per-step function."""

    kind: str  # "step-loop" | "step-function" | "lightning-step"
    node: Loop | FunctionNode | ast.Lambda  # a lambda: called per step (``to_np(out)``, ``map(lambda t: ...)``)
    batch_names: set[str] = field(default_factory=set)
    counter_names: set[str] = field(default_factory=set)
    trains: bool = False  # calls backward() or steps an optimizer
    via: ast.Call | None = None  # for step functions: the per-step call that reaches them
    # For code made hot from another file of the project: the per-step call sites that reach it,
    # outermost first, as "file:line" (empty for code hot within its own file).
    hot_path: tuple[str, ...] = ()

    @property
    def header_line(self) -> int:
        return self.node.lineno


@dataclass(frozen=True)
class HotEntry:
    """A function of this module that another module of the project calls once per step."""

    func: "FunctionNode"
    batch: frozenset[str] = frozenset()
    hot_path: tuple[str, ...] = ()


@dataclass
class HotLoops:
    """Per-step code of a module, indexed for rules."""

    regions: list[HotRegion] = field(default_factory=list)
    per_step: dict[ast.AST, HotRegion] = field(default_factory=dict)
    epoch_loops: list[Loop] = field(default_factory=list)
    accumulation_guards: list[ast.If] = field(default_factory=list)
    rare_guards: list[ast.If] = field(default_factory=list)

    @property
    def step_loops(self) -> list[HotRegion]:
        return [r for r in self.regions if r.kind == "step-loop"]

    def is_per_step(self, node: ast.AST) -> bool:
        return node in self.per_step

    def region_of(self, node: ast.AST) -> HotRegion | None:
        return self.per_step.get(node)

    _by_kind: dict[object, tuple[int, list[tuple[ast.AST, HotRegion]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def nodes(self, kind: type[T] | tuple[type, ...]) -> Iterator[tuple[T, HotRegion]]:
        """Every per-step node of the given ast type, with its region (listed once per kind:
        rules ask for the per-step calls again and again)."""
        cached = self._by_kind.get(kind)
        if cached is None or cached[0] != len(self.per_step):
            found = [(node, region) for node, region in self.per_step.items() if isinstance(node, kind)]
            cached = self._by_kind[kind] = (len(self.per_step), found)
        return iter(cached[1])  # type: ignore[arg-type]
