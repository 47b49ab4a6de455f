"""``if`` statements whose body does not run once per step though the test does.

* a branch that ends the run (``raise``, ``sys.exit(1)``, or ``assert`` of the
  opposite of its own test: ``if not math.isfinite(v): ...; assert math.isfinite(v)``):
  it runs at most once;
* lazy one-time initialisation (``if bank is None: bank = torch.zeros(...)``);
* a modulo guard written through a helper of the same file
  (``if divisible_by(step, save_every):`` with ``def divisible_by(n, d): return n % d == 0``);
* a flag set earlier in the same function by such a test
  (``is_metric_step = i_accum % metric_every == 0`` ... ``if is_metric_step:``);
* and the statements after an early exit taken unless a counter is a multiple
  (``if total % every: return``), unless they do optimizer work (an accumulation boundary).

Logging and accumulation guards written inline (``if step % 100 == 0``) are
:mod:`.step_markers`' business.
"""

from __future__ import annotations

import ast
from typing import Callable

from ..incremental.memo import keyed_memo
from ..module_index import ModuleIndex

RUN_ENDERS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


def _negation_of(assertion: ast.expr, test: ast.expr) -> bool:
    """Whether ``assert assertion`` fails whenever ``test`` holds (``test`` is ``not assertion``)."""
    if isinstance(assertion, ast.Constant) and not assertion.value:
        return True  # ``assert False``
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.dump(test.operand) == ast.dump(assertion)
    return False


def ends_the_run(ctx: ModuleIndex, body: list[ast.stmt], test: ast.expr | None = None) -> bool:
    """A branch that stops the program (``raise``, ``sys.exit(...)``, or, with the branch's ``test``,
    an ``assert`` that fails whenever the test holds): it runs at most once, so its body is not
    per-step (its test still is)."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            if ctx.call_qualname(stmt.value) in RUN_ENDERS:
                return True
        if isinstance(stmt, ast.Assert) and test is not None and _negation_of(stmt.test, test):
            return True
    return False


def _is_none_test(test: ast.expr) -> str | None:
    if (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    ):
        return ast.unparse(test.left)
    return None


def is_lazy_init(stmt: ast.If) -> bool:
    """``if bank is None: bank = torch.zeros(...).cuda()``: one-time initialisation, true once.

    Also ``if not hasattr(self, "bank"): self.bank = ...``, and a sentinel that marks a value not yet set
    (``if z < 0: z = ...``, ``if count == -1: count = ...``).  Only the body is one-time: an ``else``
    branch (``else: loss_ema = 0.9 * loss_ema + 0.1 * loss.item()``) runs on every later step."""
    test = stmt.test
    target: str | None = _is_none_test(test) or _sentinel_test(test)
    if target is None and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # ``if rank == 0 and bank is None:`` still initialises once
        target = next((t for t in map(_is_none_test, test.values) if t is not None), None)
    if target is None and (
        isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call)
        and isinstance(test.operand.func, ast.Name) and test.operand.func.id == "hasattr"
        and len(test.operand.args) == 2 and isinstance(test.operand.args[1], ast.Constant)
    ):
        target = f"{ast.unparse(test.operand.args[0])}.{test.operand.args[1].value}"
    if target is None:
        return False
    for node in stmt.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t) == target for t in targets):
                return True
    return False


def _sentinel_test(test: ast.expr) -> str | None:
    """``z < 0``, ``z <= 0``, ``z == -1``: the name or attribute compared with a sentinel (a number not above zero)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Lt, ast.LtE, ast.Eq))):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub) and isinstance(right.operand, ast.Constant):
        value = right.operand.value
        value = -value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    else:
        value = right.value if isinstance(right, ast.Constant) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value > 0 or not isinstance(left, (ast.Name, ast.Attribute)):
        return None
    if isinstance(test.ops[0], ast.Lt) and value != 0:
        return None
    return ast.unparse(left)


def modulo_helpers(ctx: ModuleIndex) -> frozenset[str]:
    """Plain functions of the module whose whole body returns ``a % b == 0`` (or ``not a % b``):
    a guard calling one with a step counter is a modulo guard written through a helper."""
    found = set()
    for name, functions in ctx.functions.items():
        for func in functions:
            body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None and _is_modulo_test(body[0].value):
                found.add(name)
    return frozenset(found)


def _is_modulo_test(expr: ast.expr) -> bool:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        expr = expr.operand
        return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod)
    return (
        isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.Eq)
        and any(isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod) for side in (expr.left, *expr.comparators))
        and any(isinstance(side, ast.Constant) and side.value == 0 for side in (expr.left, *expr.comparators))
    )


def calls_modulo_helper(test: ast.expr, helpers: frozenset[str]) -> bool:
    """``divisible_by(self.step, every)`` (also inside ``a and b``) with a helper of :func:`modulo_helpers`,
    where the divisor is not a literal 1."""
    if not helpers:
        return False
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(calls_modulo_helper(value, helpers) for value in test.values)
    return (
        isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in helpers
        and len(test.args) == 2 and not (isinstance(test.args[1], ast.Constant) and test.args[1].value == 1)
    )


def leaves_unless_modulo(stmt: ast.If) -> bool:
    """``if steps % every: return`` / ``if step % n != 0: continue``: the rest of the block runs
    only on multiples of ``n``."""
    if stmt.orelse or not stmt.body or not isinstance(stmt.body[-1], (ast.Return, ast.Continue)):
        return False
    test = stmt.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq):
        sides = (test.left, *test.comparators)
        if not any(isinstance(side, ast.Constant) and side.value == 0 for side in sides):
            return False
        test = next((side for side in sides if isinstance(side, ast.BinOp)), test)
    return (
        isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod)
        and not (isinstance(test.left, ast.Constant) and isinstance(test.left.value, (str, bytes)))
        and not (isinstance(test.right, ast.Constant) and test.right.value == 1)
    )


def flag_values(ctx: ModuleIndex, stmt: ast.If) -> "Callable[[str], ast.expr | None]":
    """For the names in STMT's test: the expression the enclosing function last assigned to one, before
    STMT (``is_metric_step = step % every == 0`` ... ``if is_metric_step:``), or None."""
    scope = ctx.enclosing_function(stmt) or ctx.tree
    # lines are kept: the scope's own line is in the key (an edit above it moves them all)
    assigned = keyed_memo(scope, "flag-assignments", getattr(scope, "lineno", 0), lambda: _name_assignments(scope))

    def value_of(name: str) -> ast.expr | None:
        earlier = [value for line, value in assigned.get(name, ()) if line < stmt.lineno]
        return earlier[-1] if earlier else None

    return value_of


def _name_assignments(scope: ast.AST) -> dict[str, list[tuple[int, ast.expr]]]:
    """Name -> (line, value) of every ``name = value`` in SCOPE, in source order (not in nested functions)."""
    found: dict[str, list[tuple[int, ast.expr]]] = {}
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, []).append((node.lineno, node.value))
        stack.extend(ast.iter_child_nodes(node))
    for entries in found.values():
        entries.sort(key=lambda entry: entry[0])
    return found
