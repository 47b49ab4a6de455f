"""What a local name or a ``**kwargs`` dict holds, as far as the file itself says.

Used by the DataLoader rules to see through ``kwargs = {"num_workers": 4}``,
``dict(...)``, ``kwargs.update(...)`` and ``kwargs["k"] = v``.  Anything the
file does not pin down (a parameter, a value from argparse or yaml, a name
bound in a ``for`` or ``with``) resolves to ``None``, and callers stay silent.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ..incremental.memo import subtree_memo
from ..incremental.walks import scope_entries

if TYPE_CHECKING:
    from .base import RuleContext

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.IfExp)
_READ_ONLY_METHODS = frozenset({"get", "copy", "items", "keys", "values", "__contains__"})
_MAX_DEPTH = 4


@dataclass
class DictModel:
    """Keys a dict may hold: key -> (possible values, whether it may be absent)."""

    entries: dict[str, tuple[list[ast.expr], bool]] = field(default_factory=dict)

    def get(self, key: str) -> tuple[list[ast.expr], bool]:
        return self.entries.get(key, ([], True))

    def set(self, key: str, value: ast.expr, conditional: bool) -> None:
        values, absent = self.get(key)
        if conditional:
            self.entries[key] = ([*values, value], absent)
        else:
            self.entries[key] = ([value], False)

    def merge(self, other: "DictModel", conditional: bool) -> None:
        for key, (values, absent) in other.entries.items():
            if conditional or absent:
                old_values, old_absent = self.get(key)
                self.entries[key] = ([*old_values, *values], old_absent)
            else:
                self.entries[key] = (list(values), False)


@dataclass(frozen=True)
class _Binding:
    """One statement that binds or changes a name."""

    stmt: ast.AST
    kind: str  # "assign" | "update" | "item" | "opaque"
    conditional: bool


def _scope_of(ctx: "RuleContext", node: ast.AST) -> ast.AST:
    return ctx.enclosing_function(node) or ctx.tree


def _walk_entries(root: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, node) for every node under ``root`` that may bind a name, ``root`` included, not
    entering nested functions or classes below it (depth first, last child first; kept per statement)."""
    return scope_entries(root, "binding_entries", _SCOPES, _binding_entries)


def _binding_entries(node: ast.AST) -> list[tuple[str, ast.AST]]:
    names = _names_bound_by(node)
    return [(name, node) for name in dict.fromkeys(names)] if names else []  # once per node


def _names_bound_by(node: ast.AST) -> list[str]:
    """Names ``node`` may bind or change (a superset of what :func:`_bindings` classifies)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return [node.func.value.id]
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    return []


def _index(entries: Iterable[tuple[str, ast.AST]]) -> dict[str, list[ast.AST]]:
    index: dict[str, list[ast.AST]] = {}
    for name, node in entries:
        index.setdefault(name, []).append(node)
    return index


def _scope_index(ctx: "RuleContext", scope: ast.AST) -> dict[str, list[ast.AST]]:
    """Name -> the nodes of ``scope`` that may bind it: under each child of the scope (the last
    child first), not entering functions or classes nested below those children.

    Built from per-statement walks (see :mod:`..walks`): a function's index is cached on the
    function node; the module's is merged from one index per top-level statement, so an edit
    re-indexes only the statements it touched.
    """
    if scope is not ctx.tree:
        return subtree_memo(
            scope,
            "binding_index",
            lambda: _index(e for child in reversed(list(ast.iter_child_nodes(scope))) for e in _walk_entries(child)),
        )
    key = ("module_binding_index",)
    merged = ctx.memo.get(key)
    if merged is None:
        merged = {}
        for statement in ctx.tree.body:
            for name, node in _binding_entries(statement):
                merged.setdefault(name, []).append(node)
            part = subtree_memo(statement, "module_binding_index", lambda s=statement: _index_below(s))
            for name, nodes in part.items():
                merged.setdefault(name, []).extend(nodes)
        ctx.memo[key] = merged
    return merged  # type: ignore[return-value]


def name_stores(ctx: "RuleContext", name: str, scope: ast.AST) -> list[ast.Name]:
    """Every ``Name`` node that stores ``name`` in ``scope`` (assignment and unpacking targets, loop and
    ``with`` targets, walrus, augmented assignment), not entering nested functions or classes: read from
    the scope's memoised binding index instead of a walk of the whole function."""
    stores: list[ast.Name] = []
    for node in _scope_index(ctx, scope).get(name, ()):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            stores.extend(n for target in targets for n in ast.walk(target)
                          if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            stores.append(node.target)
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            stores.append(node)
    return stores


def _index_below(statement: ast.AST) -> dict[str, list[ast.AST]]:
    """The index of what lies below a statement (kept on it: without the statement itself, which
    would make it garbage only the cycle collector frees, see ..walks)."""
    return _index(_walk_entries(statement)[len(_binding_entries(statement)) :])


def _is_conditional(ctx: "RuleContext", node: ast.AST, scope: ast.AST, at: ast.AST) -> bool:
    """Whether ``node`` may be skipped on the way to ``at`` (a branch encloses it but not ``at``)."""
    shared = {id(a) for a in ctx.ancestors(at)}
    for ancestor in ctx.ancestors(node):
        if ancestor is scope or id(ancestor) in shared:
            return False
        if isinstance(ancestor, _BRANCHES):
            return True
    return False


def _bindings(ctx: "RuleContext", name: str, scope: ast.AST, at: ast.AST) -> list[_Binding]:
    """Every statement in ``scope`` that binds or mutates ``name``, in source order."""
    found: list[_Binding] = []
    for node in _scope_index(ctx, scope).get(name, ()):
        kind: str | None = None
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    kind = "assign" if node.value is not None else None
                elif (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                ):
                    kind = "item"
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    kind = "opaque"
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            kind = "update" if isinstance(node.op, ast.BitOr) else "opaque"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and node.func.attr not in _READ_ONLY_METHODS
        ):
            kind = "update" if node.func.attr == "update" else "opaque"
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            if not isinstance(ctx.parents.get(node), (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                kind = "opaque"  # for-target, with-as, walrus, del
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            kind = "opaque"
        if kind is not None:
            found.append(_Binding(node, kind, _is_conditional(ctx, node, scope, at)))
    found.sort(key=lambda b: (getattr(b.stmt, "lineno", 0), getattr(b.stmt, "col_offset", 0)))
    return found


def parameter_names(func: ast.AST | None) -> set[str]:
    """Every parameter name of a function or lambda (empty for anything else)."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return set()
    args = func.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    names += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in names}


def _scoped_bindings(ctx: "RuleContext", name: str, at: ast.AST) -> list[_Binding] | None:
    """Bindings of ``name`` visible at ``at``: its function's, else the module's."""
    scope = _scope_of(ctx, at)
    if scope is not ctx.tree:
        if name in parameter_names(scope):
            return None
        local = _bindings(ctx, name, scope, at)
        if local:
            line = getattr(at, "lineno", 0)
            return [b for b in local if getattr(b.stmt, "lineno", 0) < line]
    return _bindings(ctx, name, ctx.tree, at)


def resolve_name(ctx: "RuleContext", name: str, at: ast.AST) -> ast.expr | None:
    """The expression a name holds when it is bound exactly once, unconditionally."""
    bindings = _scoped_bindings(ctx, name, at)
    if not bindings or len(bindings) != 1:
        return None
    (binding,) = bindings
    if binding.kind != "assign" or binding.conditional:
        return None
    return binding.stmt.value  # type: ignore[attr-defined, no-any-return]


def last_assignment(ctx: "RuleContext", name: str, before: ast.AST) -> ast.Assign | None:
    """The last ``name = ...`` above BEFORE in its function (or the module), by line: what the name
    last held there along straight-line code (read from :func:`name_stores`, not a walk of the scope)."""
    scope = ctx.enclosing_function(before) or ctx.tree
    line = getattr(before, "lineno", 0)
    latest: ast.Assign | None = None
    for store in name_stores(ctx, name, scope):
        node = ctx.parents.get(store)
        if (isinstance(node, ast.Assign) and node.targets == [store] and node.lineno < line
                and (latest is None or node.lineno > latest.lineno)):
            latest = node
    return latest


def resolve_choices(ctx: "RuleContext", name: str, at: ast.AST) -> list[ast.expr]:
    """Every expression a name may hold when each of its bindings is a plain assignment (``if ...:
    ds = TensorDataset(a, b) else: ds = TensorDataset(a)``); empty when one is not."""
    bindings = _scoped_bindings(ctx, name, at)
    if not bindings or any(b.kind != "assign" for b in bindings):
        return []
    return [b.stmt.value for b in bindings]  # type: ignore[attr-defined]


def resolve_dict(ctx: "RuleContext", expr: ast.expr, at: ast.AST, depth: int = 0) -> DictModel | None:
    """The keys a ``**expr`` may pass, or None when the file cannot tell."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, ast.Dict):
        return _dict_literal(ctx, expr, at, depth)
    if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "dict":
        return _dict_call(ctx, expr, at, depth)
    if isinstance(expr, ast.Name):
        return _dict_name(ctx, expr.id, at, depth)
    return None


def _dict_literal(ctx: "RuleContext", expr: ast.Dict, at: ast.AST, depth: int) -> DictModel | None:
    model = DictModel()
    for key, value in zip(expr.keys, expr.values):
        if key is None:
            inner = resolve_dict(ctx, value, at, depth + 1)
            if inner is None:
                return None
            model.merge(inner, conditional=False)
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            model.set(key.value, value, conditional=False)
        else:
            return None
    return model


def _dict_call(ctx: "RuleContext", expr: ast.Call, at: ast.AST, depth: int) -> DictModel | None:
    model = DictModel()
    if len(expr.args) > 1:
        return None
    for arg in expr.args:
        inner = resolve_dict(ctx, arg, at, depth + 1)
        if inner is None:
            return None
        model.merge(inner, conditional=False)
    for keyword in expr.keywords:
        if keyword.arg is None:
            inner = resolve_dict(ctx, keyword.value, at, depth + 1)
            if inner is None:
                return None
            model.merge(inner, conditional=False)
        else:
            model.set(keyword.arg, keyword.value, conditional=False)
    return model


def _dict_name(ctx: "RuleContext", name: str, at: ast.AST, depth: int) -> DictModel | None:
    bindings = _scoped_bindings(ctx, name, at)
    if not bindings or bindings[0].kind != "assign" or bindings[0].conditional:
        return None
    model: DictModel | None = None
    for binding in bindings:
        stmt = binding.stmt
        if binding.kind == "assign":
            if model is not None:
                return None  # rebound: which value reaches the call depends on flow
            model = resolve_dict(ctx, stmt.value, stmt, depth + 1)  # type: ignore[attr-defined]
        elif binding.kind == "item":
            key = stmt.targets[0].slice if isinstance(stmt, ast.Assign) else None  # type: ignore[union-attr]
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            model.set(key.value, stmt.value, binding.conditional)  # type: ignore[union-attr, attr-defined]
        elif binding.kind == "update":
            inner = _update_model(ctx, stmt, depth)
            if inner is None:
                return None
            model.merge(inner, binding.conditional)  # type: ignore[union-attr]
        else:
            return None
        if model is None:
            return None
    return model


def _update_model(ctx: "RuleContext", stmt: ast.AST, depth: int) -> DictModel | None:
    """The keys added by ``d.update(...)`` or ``d |= {...}``."""
    if isinstance(stmt, ast.AugAssign):
        return resolve_dict(ctx, stmt.value, stmt, depth + 1)
    assert isinstance(stmt, ast.Call)
    return _dict_call(ctx, stmt, stmt, depth + 1)
