"""Where names are bound in one scope, and which part of a loop's iterable feeds a target name.

Pure ``ast`` helpers for the tensor oracle: no inference here, only structure.
"""

from __future__ import annotations

import ast

from .base import RuleContext
from ..incremental.memo import keyed_memo
from ..incremental.walks import scope_entries

Position = tuple[int, int]
Binding = tuple[ast.AST, ast.AST, Position]  # (binding statement or arg, its target, where it binds)
COUNTER = ast.Constant(value=0)  # sentinel: the name counts iterations (enumerate index, range)
_COUNTING = frozenset({"range", "count", "itertools.count"})
_PASS_THROUGH = frozenset({"tqdm", "iter", "track", "progress", "cycle", "islice", "prefetch", "auto"})
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
                  ast.DictComp, ast.GeneratorExp)


def end_of(node: ast.AST) -> Position:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def scope_bindings(scope: ast.AST) -> dict[str, list[Binding]]:
    """name -> [(binding, target, position)] in source order, nested scopes excluded (read-only).

    A loop / with target binds before its body runs; an assignment after its value.
    A function's table is kept on it while it starts on the same line (an edit inside it
    forgets it, one above it moves it; see :mod:`..memo`); the module's is built each time
    from what each statement binds, kept on the statement (see :mod:`..walks`).
    """
    if isinstance(scope, ast.Module):
        return _scope_bindings(scope)
    return keyed_memo(scope, "scope_bindings", getattr(scope, "lineno", None), lambda: _scope_bindings(scope))


def _scope_bindings(scope: ast.AST) -> dict[str, list[Binding]]:
    found: dict[str, list[Binding]] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                found.setdefault(arg.arg, []).append((arg, arg, (0, 0)))
    roots = [n for n in ast.iter_child_nodes(scope) if not isinstance(n, (ast.arguments, *_NESTED_SCOPES))]
    for root in reversed(roots):
        for name, statement, target in scope_entries(root, "scope_bindings", _NESTED_SCOPES, _binds):
            where = end_of(target) if isinstance(statement, (ast.For, ast.AsyncFor, ast.withitem)) else end_of(statement)
            found.setdefault(name, []).append((statement, target, where))
    for bindings in found.values():
        bindings.sort(key=lambda item: item[2])
    return found


def _binds(node: ast.AST) -> list[tuple[str, ast.AST, ast.AST]]:
    """(name, binding statement, target) for the names ``node`` itself binds."""
    if isinstance(node, ast.Assign):
        targets = [(target, node) for target in node.targets]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
        targets = [(node.target, node)]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets = [(node.optional_vars, node)]
    else:
        return []
    return [(sub.id, statement, target) for target, statement in targets for sub in _target_names(target)]


def _target_names(target: ast.AST) -> list[ast.Name]:
    """The names in an assignment target, less those in a subscript's key: ``losses[f"{prefix}_loss"] = loss``
    stores into ``losses`` and leaves ``prefix`` as it was."""
    if isinstance(target, ast.Subscript):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return [sub for sub in ast.walk(target) if isinstance(sub, ast.Name)]


def element_source(ctx: RuleContext, target: ast.AST, name: str, iterable: ast.AST) -> ast.AST | None:
    """The iterable whose elements ``name`` receives: ``zip`` position-wise, ``enumerate``'s
    index is :data:`COUNTER`, progress wrappers are looked through; None when unclear."""
    while True:
        if isinstance(target, ast.Name):
            if target.id != name:
                return None
            if isinstance(iterable, ast.Call) and (ctx.qualname(iterable.func) or "") in _COUNTING:
                return COUNTER
            if isinstance(iterable, ast.Call) and _callee(iterable) in _PASS_THROUGH and iterable.args:
                iterable = iterable.args[0]
                continue
            return iterable
        if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(iterable, ast.Call):
            return iterable if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)) else None
        callee = _callee(iterable)
        if callee in _PASS_THROUGH and iterable.args:
            iterable = iterable.args[0]
            continue
        if callee == "enumerate" and iterable.args and len(target.elts) == 2:
            index, rest = target.elts
            if isinstance(index, ast.Name) and index.id == name:
                return COUNTER
            target, iterable = rest, iterable.args[0]
            continue
        if callee == "zip" and len(iterable.args) == len(target.elts) and not iterable.keywords:
            for element, source in zip(target.elts, iterable.args):
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(element)):
                    target, iterable = element, source
                    break
            else:
                return None
            continue
        return iterable if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)) else None


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
