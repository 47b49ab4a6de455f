"""Code a module's forward pass runs: a model's ``forward`` runs once per step wherever the model
is called, even when no step loop that calls it is in sight (a submodule called as ``self.sa1(x)``,
a model chosen by ``importlib.import_module(args.model)``).

Two rules read it, for shapes that cost on every forward pass whoever calls it: TT305 (a tensor
built on the CPU and copied to the device) and TT101 (a registered buffer read on the host,
``int(self.params[0].item())``: a buffer lives where the model does).  Other host reads need to
know where a tensor lives, which a forward alone does not say.  The code counted:

* the ``forward`` methods of the file's ``nn.Module`` classes (a class whose base is named
  ``...Module``, or is such a class of the file);
* the file's module-level functions those call by name, and the functions they call, three
  calls deep (``farthest_point_sample(xyz, npoint)`` in a sampling layer's ``forward``);
* the ``__init__`` of a class that forward code builds, in this file or (``ctx.forward_reached``, from
  the project) in another that imports it (``TriangularCausalMask(B, L, device=x.device)``), and the
  module-level functions another file's forward code calls (``timestep_embedding(t, dim)``).

Left out: statements under a test that asks whether something was built already
(``if self.mask is None:``, ``if key not in cache:``): they run once per shape, not per step;
and the branch a flag parameter that defaults to off opens (``def forward(self, x, reverse=False)``
... ``if not reverse: ... else: <sampling>``): a training step calls the model with its defaults.
"""

from __future__ import annotations

import ast
from typing import Iterator

from ..syntax import bound_name, names_module_base, parameter_defaults, parameter_names
from .base import RuleContext

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

_DEPTH = 3


def forward_calls(ctx: RuleContext) -> Iterator[ast.Call]:
    """The calls made by the file's module ``forward`` methods and the helpers they call (see the module doc)."""
    key = ("forward-calls",)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = tuple(_calls(ctx))
    return iter(found)  # type: ignore[arg-type]


def _module_classes(ctx: RuleContext) -> list[ast.ClassDef]:
    classes = [node for node in ctx.nodes_of(ast.ClassDef) if isinstance(node, ast.ClassDef)]
    modules: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in modules and any(names_module_base(b) or _base_name(b) in modules for b in cls.bases):
                modules.add(cls.name)
                changed = True
    return [cls for cls in classes if cls.name in modules]


def _base_name(base: ast.expr) -> str:
    return bound_name(base) or ""


def _calls(ctx: RuleContext) -> Iterator[ast.Call]:
    helpers = {name: [f for f in functions if not ctx.is_method(f)] for name, functions in ctx.functions.items()}
    classes = {cls.name: cls for cls in ctx.nodes_of(ast.ClassDef) if isinstance(cls, ast.ClassDef)}
    frontier: list[tuple[FunctionNode, ast.ClassDef | None]] = [
        (f, cls) for cls in _module_classes(ctx) for f in cls.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "forward"
    ]
    # what another file's forward code runs of this one (project.forward_reached): a class's __init__, a function
    for name in sorted(ctx.forward_reached):
        if name in classes:
            frontier += [(f, classes[name]) for f in _methods(classes[name], "__init__")]
        frontier += [(f, None) for f in helpers.get(name, ())]
    seen: set[ast.AST] = set()
    for _ in range(_DEPTH + 1):
        following: list[tuple[FunctionNode, ast.ClassDef | None]] = []
        for function, owner in frontier:
            if function in seen:
                continue
            seen.add(function)
            for call in _own_calls(ctx, function):
                yield call
                func = call.func
                if isinstance(func, ast.Name):
                    following.extend((helper, None) for helper in helpers.get(func.id, ()))
                    built = classes.get(func.id)  # a helper object built every pass: its __init__ runs too
                    if built is not None:
                        following.extend((method, built) for method in _methods(built, "__init__"))
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                        and owner is not None:  # the class's own methods forward calls (``self._dequeue_and_enqueue(k)``)
                    following.extend((method, owner) for method in _methods(owner, func.attr))
                elif isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
                    for choice in _dispatched(function, func.value.id):  # ``model_func[self.model_name](h, r, t)``
                        if isinstance(choice, ast.Name):
                            following.extend((helper, None) for helper in helpers.get(choice.id, ()))
                        elif owner is not None and isinstance(choice, ast.Attribute) and bound_name(choice.value) == "self":
                            following.extend((method, owner) for method in _methods(owner, choice.attr))
        frontier = following


def _dispatched(function: FunctionNode, table: str) -> list[ast.expr]:
    """The functions a dict literal bound to ``table`` in ``function`` maps names to (``{'TransE': self.TransE,
    'RotatE': self.RotatE}``): a call of ``table[key](...)`` runs one of them."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) \
                and any(isinstance(t, ast.Name) and t.id == table for t in node.targets):
            return [v for v in node.value.values if isinstance(v, (ast.Name, ast.Attribute))]
    return []


def _methods(cls: ast.ClassDef, name: str) -> list[FunctionNode]:
    return [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name]


def _own_calls(ctx: RuleContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """The function's calls, not those of nested definitions nor those under a built-already test."""
    flags = _off_flags(function)
    params = parameter_names(function.args) - flags - {"self"}
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        needs_flag = _flag_test(node.test, flags) if isinstance(node, ast.If) else None
        if isinstance(node, ast.If) and needs_flag is not None:  # the branch a call with the defaults takes
            stack.extend(reversed(node.orelse if needs_flag else node.body))
            stack.append(node.test)
            continue
        if isinstance(node, ast.If) and _asks_if_built(node.test) and not _asks_of_a_parameter(node.test, params) \
                and not _picks_from_a_table(function, node.test):
            stack.extend(reversed(node.orelse))
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _off_flags(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters that default to ``False`` (or ``None``): off unless a caller turns them on."""
    return {arg.arg for arg, default in parameter_defaults(function.args).items()
            if isinstance(default, ast.Constant) and (default.value is False or default.value is None)}


def _flag_test(test: ast.expr, flags: set[str]) -> bool | None:
    """``if flag:`` / ``if param is not None:`` -> True (the body needs the parameter set), ``if not flag:`` /
    ``if param is None:`` -> False (the body runs when a caller leaves it out), else None."""
    if isinstance(test, ast.Name) and test.id in flags:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name) \
            and test.operand.id in flags:
        return False
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and test.left.id in flags \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        return isinstance(test.ops[0], ast.IsNot)
    return None


def _asks_of_a_parameter(test: ast.expr, params: set[str]) -> bool:
    """``if attn_mask is None:`` on a parameter the caller passes: what was handed in, not a cache being
    filled, so the branch runs whenever a caller passes None (every pass, when it always does)."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
        and isinstance(test.left, ast.Name) and test.left.id in params \
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _picks_from_a_table(function: FunctionNode, test: ast.expr) -> bool:
    """``if self.model_name in model_func:`` on a dispatch table of functions (see :func:`_dispatched`): a choice of
    the function to run, every pass, not a cache."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In) \
        and isinstance(test.comparators[0], ast.Name) and bool(_dispatched(function, test.comparators[0].id))


def _asks_if_built(test: ast.expr) -> bool:
    """``x is None``, ``key not in cache``, ``not hasattr(self, "mask")``: a cache being filled."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr"):
            return True
    return False
