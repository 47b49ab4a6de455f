"""Logging in the step: what counts as a log call, what it formats, and the
"only every N steps" fix that wraps a statement in ``if <counter> % <N> == 0:``."""

from __future__ import annotations

import ast
import re

from ...findings import Applicability, Edit, Fix, Span
from .base import RuleContext
from ..hotloops.finder import HotRegion
from ..syntax import parameter_names
from ..text import indentation

CLOCK_CALLS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns",
     "time.monotonic_ns", "timeit.default_timer"}
)
_LOGGER_RECEIVER = re.compile(r"^(_?logger|_?log|LOGGER|LOG|logging|_?LOGGER)$")
_LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
_PROGRESS_METHODS = frozenset({"set_postfix", "set_postfix_str", "set_description", "set_description_str"})
_NOT_FORMATTED = frozenset({"file", "end", "sep", "flush", "refresh", "exc_info", "stacklevel", "extra"})
_STEP_PARAMETER = re.compile(r"^(step|global_step|it|iteration|iter_num|batch_idx|batch_nb|i)$")
_INTERVAL_NAME = re.compile(
    r"^(log_every|log_interval|log_freq|log_frequency|log_steps|logging_steps|log_iter|log_every_n_steps|"
    r"print_every|print_freq|print_interval|display_every|display_interval|disp_freq)$"
)
_COUNTER_INCREMENT = re.compile(r"(step|iter|^it$|^i$|count|batch_idx)")
DEFAULT_EVERY = "100"


def is_log_call(ctx: RuleContext, call: ast.AST) -> bool:
    """``print``, ``logger.info``, ``logging.warning``, ``pbar.set_postfix``, ``accelerator.print``..."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "print" and "print" not in ctx.aliases
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _PROGRESS_METHODS or func.attr == "print":
        return True
    receiver = ctx.dotted(func.value) or ""
    if func.attr == "write":
        return receiver in ("tqdm", "sys.stdout", "sys.stderr") or receiver.endswith(("pbar", "bar", "progress"))
    return func.attr in _LOGGER_METHODS and bool(_LOGGER_RECEIVER.match(receiver.rsplit(".", 1)[-1]))


def formatted_values(call: ast.Call) -> list[ast.expr]:
    """The expressions a log call turns into text (f-string parts, %-args, .format args, dict values)."""
    values: list[ast.expr] = []
    pending: list[ast.expr] = [*call.args, *(k.value for k in call.keywords if k.arg not in _NOT_FORMATTED)]
    while pending:
        argument = pending.pop(0)
        if isinstance(argument, ast.JoinedStr):
            pending.extend(part.value for part in argument.values if isinstance(part, ast.FormattedValue))
        elif isinstance(argument, ast.Dict):
            pending.extend(v for v in argument.values if v is not None)
        elif isinstance(argument, (ast.Tuple, ast.List)):
            pending.extend(argument.elts)
        elif isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute) and argument.func.attr == "format":
            pending.extend([*argument.args, *(k.value for k in argument.keywords)])
        elif isinstance(argument, ast.BinOp) and isinstance(argument.op, (ast.Mod, ast.Add)) and _is_text(argument.left):
            pending.extend([argument.left, argument.right])
        elif not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            values.append(argument)
    return values


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)) or (
        isinstance(node, ast.BinOp) and _is_text(node.left)
    )


def enclosing_log_call(ctx: RuleContext, node: ast.AST) -> ast.Call | None:
    """The log call whose arguments contain ``node`` (stops at the statement)."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.stmt):
            return None
        if isinstance(ancestor, ast.Call) and child is not ancestor.func and is_log_call(ctx, ancestor):
            return ancestor
        child = ancestor
    return None


# --- the "every N steps" fix ----------------------------------------------------


def step_counter(ctx: RuleContext, region: HotRegion) -> str | None:
    """A name that counts steps in the region: enumerate index, range variable,
    ``step += 1`` in the loop, or a step-like parameter of a step function."""
    if region.counter_names:
        return sorted(region.counter_names)[0]
    if isinstance(region.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for arg in region.node.args.args:
            if _STEP_PARAMETER.match(arg.arg):
                return arg.arg
        return None
    for node, owner in ctx.hot.nodes(ast.AugAssign):
        if owner is region and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            if isinstance(node.value, ast.Constant) and node.value.value == 1 and _COUNTER_INCREMENT.search(node.target.id):
                return node.target.id
    return None


def log_interval(ctx: RuleContext, statement: ast.stmt) -> str:
    """``log_every`` / ``args.log_interval`` when such a name is visible at ``statement``, else 100."""
    function = ctx.enclosing_function(statement)
    if function is not None:
        for arg in [*function.args.args, *function.args.kwonlyargs]:
            if _INTERVAL_NAME.match(arg.arg):
                return arg.arg
    visible = _module_names(ctx) | (_function_names(function) if function is not None else set())
    for node in ctx.nodes_of((ast.Name, ast.Attribute)):
        if isinstance(node, (ast.Name, ast.Attribute)) and _INTERVAL_NAME.match(
            node.id if isinstance(node, ast.Name) else node.attr
        ):
            dotted = ctx.dotted(node)
            if dotted and dotted.split(".")[0] in visible and not dotted.startswith("self."):
                return dotted
    return DEFAULT_EVERY


def _module_names(ctx: RuleContext) -> set[str]:
    names = set(ctx.aliases)
    for statement in ctx.tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                break
    return names


def _function_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = parameter_names(function.args)
    names |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _has_multiline_string(statement: ast.stmt) -> bool:
    return any(
        isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno for n in ast.walk(statement)
    )


def _indent_unit(ctx: RuleContext, statement: ast.stmt) -> str:
    parent = ctx.parents.get(statement)
    own = indentation(ctx.lines[statement.lineno - 1])
    if isinstance(parent, ast.stmt):
        outer = indentation(ctx.lines[parent.lineno - 1])
        if own.startswith(outer) and len(own) > len(outer):
            return own[len(outer):]
    return "\t" if own.startswith("\t") else "    "


def guard_statement_fix(ctx: RuleContext, statement: ast.stmt, counter: str, title_what: str) -> Fix | None:
    """Wrap a statement in ``if <counter> % <N> == 0:`` (unsafe: it then runs less often).

    Not offered when the statement shares a line with another one or holds a
    multi-line string (re-indenting would change the string).
    """
    if _has_multiline_string(statement) or statement.end_lineno is None:
        return None
    first = ctx.lines[statement.lineno - 1]
    indent = indentation(first)
    if first[len(indent):ctx.char_column(statement.lineno, statement.col_offset)].strip():
        return None
    last = ctx.lines[statement.end_lineno - 1]
    if last[ctx.char_column(statement.end_lineno, statement.end_col_offset or 0):].strip().startswith(";"):
        return None
    every = log_interval(ctx, statement)
    unit = _indent_unit(ctx, statement)
    body = [ctx.lines[number - 1] for number in range(statement.lineno, statement.end_lineno + 1)]
    text = f"{indent}if {counter} % {every} == 0:\n" + "".join(
        (f"{unit}{line}\n" if line.strip() else "\n") for line in body
    )
    span = Span(statement.lineno, 1, statement.end_lineno + 1, 1)
    return Fix(f"Only {title_what} every {every} steps (`{counter} % {every}`)", Applicability.UNSAFE, (Edit(span, text),))
