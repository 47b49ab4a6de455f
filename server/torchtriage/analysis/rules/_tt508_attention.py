"""TT508's result type and its walk back through local names.

:class:`Attention` is one recognised attention computation (filled in by
:func:`._tt508_match.match_attention`); :class:`NameWalk` follows a name back to
the plain assignment it reads (the nearest one before the use, in the same or an
enclosing block), recording what it walked through.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .base import RuleContext


@dataclass
class Attention:
    """One recognised attention computation and what a rewrite needs."""

    final: ast.expr  # the ``weights @ v`` node
    softmax: ast.Call
    query: ast.expr
    key: ast.expr  # the key itself (the transpose peeled off)
    value: ast.expr
    statements: list[ast.Assign] = field(default_factory=list)  # assignments walked through, earliest first
    chain_names: list[ast.Name] = field(default_factory=list)  # the Name loads the walk went through
    scale: str | None = None  # the SDPA ``scale=`` source; None: no scale in the code (SDPA needs 1.0)
    mask: str | None = None  # the SDPA ``attn_mask=`` source
    dropout: str | None = None  # the SDPA ``dropout_p=`` source
    unsafe: list[str] = field(default_factory=list)  # what a rewrite would change
    # What the einsums' layout needs before SDPA can take it: "channels" (q, k or v laid out
    # (…, E, L), SDPA wants (…, L, E)), "shared" (one key/value head for every query head), "permuted"
    # (the batch letters of an einsum elsewhere: (B, L, H, E)).
    layout: frozenset[str] = frozenset()
    conditional: ast.If | None = None  # an ``if`` that updates the scores on some calls (a mask), looked past
    blocked: str = ""  # why no rewrite is offered

    @property
    def first_statement(self) -> ast.stmt | None:
        return self.statements[0] if self.statements else None


class NameWalk:
    """Backwards resolution of local names inside one scope."""

    def __init__(self, ctx: RuleContext, found: Attention | None = None) -> None:
        self.ctx = ctx
        self.found = found

    def definition(self, name: ast.Name) -> ast.Assign | None:
        """The plain ``name = value`` that the load ``name`` reads: the nearest statement before it
        (in its block, then the enclosing blocks) that binds the name; None when that binding is not
        a single-target assignment.  An ``if`` without ``else`` that only updates the name from
        itself (``if mask is not None: sim = sim.masked_fill(~mask, -inf)``) is looked past, and
        recorded (:attr:`Attention.conditional`): the attention is the same with or without it."""
        stmt = self.ctx.enclosing_statement(name)
        while stmt is not None:
            block, index = block_of(self.ctx, stmt)
            for earlier in reversed(block[:index]):
                if _binds(earlier, name.id):
                    if isinstance(earlier, ast.Assign) and len(earlier.targets) == 1 and is_name(earlier.targets[0], name.id):
                        return earlier
                    if _updates_only_from_itself(earlier, name.id):
                        if self.found is not None and self.found.conditional is None:
                            self.found.conditional = earlier
                        continue
                    return None
            parent = self.ctx.parents.get(stmt)
            if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)):
                return None
            stmt = parent if isinstance(parent, ast.stmt) else self.ctx.enclosing_statement(parent)
        return None

    def through_names(self, node: ast.expr) -> ast.expr:
        """Follow a Name to the value it was assigned (repeatedly), recording the walk."""
        while isinstance(node, ast.Name):
            assign = self.definition(node)
            if assign is None:
                return node
            if self.found is not None:
                self.found.chain_names.append(node)
                self.found.statements.append(assign)
            node = assign.value
        return node


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _updates_only_from_itself(stmt: ast.stmt, name: str, nested: bool = False) -> bool:
    """``if cond: name = name.masked_fill(...)`` / ``name = name + bias`` (no ``else``): every
    statement of the body that binds ``name`` rebinds it, whole, from ``name`` itself (the others,
    ``mask = F.pad(mask, ...)``, prepare the update), or is an ``if`` / ``elif`` chain inside it
    whose branches do (``if self.position_embedding_type == "relative_key": scores = scores + rel``)."""
    if not isinstance(stmt, ast.If) or (stmt.orelse and not nested):
        return False
    updates = [inner for inner in (*stmt.body, *stmt.orelse) if _binds(inner, name)]
    return bool(updates) and all(
        (isinstance(inner, ast.Assign) and len(inner.targets) == 1 and is_name(inner.targets[0], name)
         and any(is_name(n, name) for n in ast.walk(inner.value)))
        or _updates_only_from_itself(inner, name, nested=True)
        for inner in updates
    )


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether a statement (or a block inside it) binds ``name``."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
    return False


def block_of(ctx: RuleContext, stmt: ast.stmt) -> tuple[list[ast.stmt], int]:
    """The statement list holding ``stmt`` and its index there."""
    parent = ctx.parents.get(stmt)
    if parent is not None:
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and stmt in value:
                return value, value.index(stmt)
    return [stmt], 0
