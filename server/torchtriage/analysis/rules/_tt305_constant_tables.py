"""TT305's constant tables: an array an object computes once, wrapped and moved again on every call.

Diffusion code keeps its noise schedule as NumPy arrays set in ``__init__`` and reads them per step
through a helper that copies the whole table to the device each time::

    def _extract_into_tensor(arr, timesteps, broadcast_shape):
        res = th.from_numpy(arr).to(device=timesteps.device)[timesteps].float()

    class GaussianDiffusion:
        def __init__(self, betas):
            self.sqrt_alphas_cumprod = np.sqrt(np.cumprod(1.0 - betas))
        def q_sample(self, x_start, t):
            return _extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start

The moved value is ``torch.from_numpy(P)`` (or ``torch.as_tensor`` / ``torch.tensor``) of a parameter ``P``
of its function, and every call of that function in the file passes, for ``P``, attributes of ``self``
that its class assigns only in ``__init__`` (or NumPy of them, ``1.0 - self.alphas_cumprod``, also through
the caller's locals): the same table every step, never the step's data.
"""

from __future__ import annotations

import ast
from typing import Optional

from ..incremental.walks import subtree
from ._scopes import scope_bindings
from .base import RuleContext

WRAPPERS = ("torch.from_numpy", "torch.as_tensor", "torch.tensor")  # host data to a tensor, copied nowhere


def constant_table(ctx: RuleContext, value: ast.expr, move: ast.Call) -> Optional[str]:
    """``self.<attr>`` (the first call site's) when ``value``, moved by ``move``, wraps a parameter that every
    call of its function in this file fills with an attribute its class sets only in ``__init__``; else None."""
    if not (isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name)
            and (ctx.qualname(value.func) or "") in WRAPPERS):
        return None
    function = ctx.enclosing_function(move)
    if function is None:
        return None
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    name = value.args[0].id
    if name not in params:
        return None
    method = ctx.is_method(function)
    position = params.index(name) - (1 if method and params and params[0] in ("self", "cls") else 0)
    calls = [c for c in ctx.nodes_of(ast.Call) if isinstance(c, ast.Call) and _calls(c, function.name, method)]
    tables = [_table_passed(ctx, c, position, name) for c in calls]
    if not tables or any(t is None for t in tables):
        return None
    return f"self.{tables[0]}"


def _calls(call: ast.Call, name: str, method: bool) -> bool:
    """``name(...)`` for a module function, ``self.name(...)`` for a method."""
    func = call.func
    if method:
        return isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Name) and func.value.id == "self"
    return isinstance(func, ast.Name) and func.id == name


def _table_passed(ctx: RuleContext, call: ast.Call, position: int, keyword: str) -> Optional[str]:
    """The (first) attribute passed for the parameter, when the argument is a host constant of the caller's class
    (see :func:`_constant_parts`)."""
    passed = next((k.value for k in call.keywords if k.arg == keyword), None)
    if passed is None and position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        passed = call.args[position]
    cls = ctx.enclosing_class(call)
    caller = ctx.enclosing_function(call)
    if passed is None or cls is None or caller is None:
        return None
    tables = _constant_parts(ctx, passed, caller, 2, call.lineno)
    if not tables:
        return None
    for table in tables:
        writers = {ctx.enclosing_function(node) for node in subtree(cls) if _writes(node, table)}
        if not writers or not all(w is not None and w.name == "__init__" for w in writers):
            return None
    return tables[0]


def _constant_parts(ctx: RuleContext, expr: ast.expr, caller: ast.AST, depth: int, line: int | None = None) -> Optional[list[str]]:
    """The ``self`` attributes a host constant is made of, or None when ``expr`` is not one.  A host constant
    reads ``self.<attr>`` values, literals, globals of the module (NumPy, an enum) and locals of the caller
    last assigned, above ``line`` (the call's), from host constants (``model_variance = np.append(
    self.posterior_variance[1], ...)``), never a parameter of the caller (the step's data)."""
    found = [n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"]
    bindings = scope_bindings(caller)
    at = (line if line is not None else getattr(expr, "lineno", 0), 0)
    for name in {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id != "self"}:
        before = [statement for statement, _, where in bindings.get(name, ()) if where < at]
        if not before:
            continue  # a global of the module
        value = before[-1].value if isinstance(before[-1], ast.Assign) else None  # (a tuple target: the whole value)
        if value is None or depth == 0:
            return None  # a parameter (the step's data), a loop, ``with`` or augmented binding: no constant
        parts = _constant_parts(ctx, value, caller, depth - 1, getattr(value, "lineno", at[0]))
        if parts is None:
            return None
        found.extend(parts)
    return found


def _writes(node: ast.AST, attr: str) -> bool:
    """An assignment to ``self.<attr>`` (plain, augmented or annotated)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    return any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) and t.value.id == "self"
               for t in targets)
