"""Small syntax questions shared by the hot-loop finder, the project model and the rules.

Pure functions over ``ast`` nodes: the name a value is bound to, the positional
arguments whose positions are known, the value passed for a keyword argument, the
value a name was last assigned in a scope.
"""

from __future__ import annotations

import ast
from typing import Iterator

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def bound_name(node: ast.AST) -> str | None:
    """The variable or attribute an expression names: ``loader`` -> ``loader``, ``self.dl`` -> ``dl``;
    None for anything else (a call, a subscript, a literal)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


# Library bases that make a class a torch module without "Module" in their names: PyG's message-passing layers
# and torch's loss bases.  A class deriving from one runs its ``forward`` per step like any ``nn.Module``.
LIBRARY_MODULE_BASES = frozenset({"MessagePassing", "_Loss", "_WeightedLoss"})


def names_module_base(base: ast.expr) -> bool:
    """Whether a class base names a torch module class: ``nn.Module``, ``LightningModule``, ``MessagePassing``."""
    name = bound_name(base) or ""
    return name.endswith("Module") or name in LIBRARY_MODULE_BASES


def parameter_names(arguments: ast.arguments) -> set[str]:
    """The names a function's own parameters bind (positional-only, ordinary, keyword-only; not ``*args``
    or ``**kwargs``)."""
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}


def parameter_defaults(arguments: ast.arguments) -> dict[ast.arg, ast.expr]:
    """Each parameter that has a default, with it (positional ones align with ``defaults`` from the end;
    keyword-only ones without a default are left out)."""
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    defaults.update((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
    return defaults


def positional_before_starred(args: list[ast.expr]) -> list[ast.expr]:
    """Positional arguments up to the first ``*args``: after it, positions are unknown."""
    for index, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            return args[:index]
    return args


def positional_parameters(args: ast.arguments, call: ast.Call) -> list[tuple[str, ast.expr]]:
    """(parameter, argument) for a call's positional arguments up to the first ``*args`` (``self`` and ``cls``
    skipped); those past the named parameters go to the ``*args`` parameter, when there is one.  The first
    ``*spread`` itself (``self.to_device(*items)``) may fill any parameter from its position on that has no
    default (options with defaults are seldom filled by a spread), and the ``*args`` parameter."""
    named = [a for a in [*args.posonlyargs, *args.args] if a.arg not in ("self", "cls")]
    params = [a.arg for a in named]
    given = positional_before_starred(call.args)
    pairs = list(zip(params, given))
    if args.vararg is not None:
        pairs.extend((args.vararg.arg, arg) for arg in given[len(params):])
    if len(given) < len(call.args):  # a ``*spread`` at this position
        spread = call.args[len(given)].value  # type: ignore[attr-defined]
        required = len(named) - len(args.defaults)  # the positional parameters without a default come first
        pairs.extend((param, spread) for param in params[len(given):required])
        if args.vararg is not None:
            pairs.append((args.vararg.arg, spread))
    return pairs


def keyword_value(call: ast.Call, name: str, last: bool = False) -> ast.expr | None:
    """The value passed for keyword argument ``name`` (``f(x, name=value)``); None when it is not
    passed by name (a ``**kwargs`` spread is not looked into).  A parsed call may repeat a keyword
    (``ast.parse`` accepts it; only compiling to bytecode rejects it): the first one counts, or with
    ``last`` the last one."""
    found = None
    for keyword in call.keywords:
        if keyword.arg == name:
            if not last:
                return keyword.value
            found = keyword.value
    return found


def _direct_assignments(scope: ast.AST) -> Iterator[tuple[str, int, ast.expr]]:
    """(name, line, value) of each plain-name assignment directly in a scope (not in nested
    functions, classes or lambdas)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.lineno, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            yield node.target.id, node.lineno, node.value
        stack.extend(ast.iter_child_nodes(node))


def scope_assignments(scope: ast.AST) -> dict[str, ast.expr]:
    """Plain name -> the value of its last (by line) assignment directly in a scope (not in
    nested functions, classes or lambdas)."""
    best: dict[str, tuple[int, ast.expr]] = {}
    for name, line, value in _direct_assignments(scope):
        if line > best.get(name, (-1, None))[0]:
            best[name] = (line, value)
    return {name: value for name, (_, value) in best.items()}


def assignment_history(scope: ast.AST) -> dict[str, list[tuple[int, ast.expr]]]:
    """Plain name -> (line, value) of every assignment directly in a scope, by line."""
    found: dict[str, list[tuple[int, ast.expr]]] = {}
    for name, line, value in _direct_assignments(scope):
        found.setdefault(name, []).append((line, value))
    for values in found.values():
        values.sort(key=lambda item: item[0])
    return found


def assigned_value(
    scope: ast.AST, name: str, cache: dict[ast.AST, dict[str, ast.expr]] | None = None
) -> ast.expr | None:
    """The value last assigned to a plain name directly in a scope (``cache``: scope -> table)."""
    table = cache.get(scope) if cache is not None else None
    if table is None:
        table = scope_assignments(scope)
        if cache is not None:
            cache[scope] = table
    return table.get(name)


def picked_from_dict(value: ast.expr | None) -> list[ast.expr]:
    """The values of a dict literal an expression picks one of by key (``{"feat": feat_mix, "dim": dim_mix}[mode]``,
    ``{...}.get(mode)``); empty for anything else."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Dict):
        return [v for v in value.value.values if v is not None]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get" \
            and isinstance(value.func.value, ast.Dict):
        return [v for v in value.func.value.values if v is not None]
    return []
