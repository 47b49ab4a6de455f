"""Which code runs once per training/eval step.

A *step loop* is a ``for``/``while`` loop whose own body (not counting nested
loops and definitions) calls ``backward()``, steps an optimizer, iterates a
DataLoader or loader-like iterable, or calls the model on the loop's data.
Loops that only contain step loops (per-epoch loops) are not hot.

Per-step code is the body of every step loop, plus the bodies of functions in
the same file called from per-step code (``train_step(batch)``,
``self.shared_step(batch)``), transitively, plus Lightning ``*_step`` methods.
Statements under a rarely-true guard (``if step % log_every == 0``,
``if i == len(loader) - 1``) are not per-step; a modulus of literal 1 is.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, TypeVar

if TYPE_CHECKING:
    from .context import ModuleContext

Loop = ast.For | ast.AsyncFor | ast.While
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)

LIGHTNING_STEP_METHODS = frozenset(
    {"training_step", "validation_step", "test_step", "predict_step"}
)
_LOADER_NAME = re.compile(r"(loader|(^|_)dl$|^dl_|batches$|batch_iter|data_iter|(^|_)iterator$)", re.I)
_MODEL_NAME = re.compile(
    r"^(model|net|network|module|ddp_model|raw_model|classifier|generator|discriminator|"
    r"encoder|decoder|policy|backbone|teacher|student|ema_model|(\w+_)?model)$",
    re.I,
)
_OPTIMIZER_NAME = re.compile(r"(opt|optim|optimizer|scaler)\w*$", re.I)
_COUNTER_NAME = re.compile(r"(step|iter|idx|index|batch_i|^i$|^it$|^n$|epoch|count)", re.I)
_FLAG_NAME = re.compile(
    r"(last|first|final|log|print|display|verbose|debug|save|checkpoint|ckpt|report|vis|sample|"
    r"eval|val|should|is_main|master|dry)",
    re.I,
)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "islice", "track", "progress", "cycle"})

T = TypeVar("T", bound=ast.AST)


@dataclass(eq=False)
class HotRegion:
    """A piece of code that runs once per step: a step loop or a per-step function."""

    kind: str  # "step-loop" | "step-function" | "lightning-step"
    node: Loop | FunctionNode
    batch_names: set[str] = field(default_factory=set)
    counter_names: set[str] = field(default_factory=set)
    trains: bool = False  # calls backward() or steps an optimizer
    via: ast.Call | None = None  # for step functions: the per-step call that reaches them

    @property
    def header_line(self) -> int:
        return self.node.lineno


@dataclass
class HotLoops:
    """Per-step code of a module, indexed for rules."""

    regions: list[HotRegion] = field(default_factory=list)
    per_step: dict[ast.AST, HotRegion] = field(default_factory=dict)
    epoch_loops: list[Loop] = field(default_factory=list)

    @property
    def step_loops(self) -> list[HotRegion]:
        return [r for r in self.regions if r.kind == "step-loop"]

    def is_per_step(self, node: ast.AST) -> bool:
        return node in self.per_step

    def region_of(self, node: ast.AST) -> HotRegion | None:
        return self.per_step.get(node)

    def nodes(self, kind: type[T] | tuple[type, ...]) -> Iterator[tuple[T, HotRegion]]:
        """Every per-step node of the given ast type, with its region, in source order."""
        for node, region in self.per_step.items():
            if isinstance(node, kind):
                yield node, region  # type: ignore[misc]


# --- markers ------------------------------------------------------------------


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Nodes of a body, not descending into nested loops or definitions."""
    stack: list[ast.AST] = [
        stmt for stmt in reversed(body) if not isinstance(stmt, (*_SCOPE_NODES, *_LOOP_NODES))
    ]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPE_NODES) or isinstance(child, _LOOP_NODES):
                continue
            stack.append(child)


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return ""


def is_backward_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
    )


def is_optimizer_step(node: ast.AST) -> bool:
    """``optimizer.step()``, ``opt.step()``, ``scaler.step(optimizer)``; not schedulers."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr != "step":
        return False
    receiver = _last_name(node.func.value)
    if "sched" in receiver.lower():
        return False
    return bool(_OPTIMIZER_NAME.search(receiver)) or any(
        _OPTIMIZER_NAME.search(_last_name(arg)) for arg in node.args
    )


def unwrap_iterable(node: ast.AST) -> ast.AST:
    """``enumerate(tqdm(loader))`` -> ``loader``."""
    while isinstance(node, ast.Call) and node.args and _last_name(node.func) in _WRAPPERS:
        node = node.args[0]
    return node


def _is_loader_like(node: ast.AST, loader_vars: set[str]) -> bool:
    inner = unwrap_iterable(node)
    name = _last_name(inner)
    if isinstance(inner, ast.Call) and name.endswith("DataLoader"):
        return True
    if isinstance(inner, (ast.Name, ast.Attribute)):
        return name in loader_vars or bool(_LOADER_NAME.search(name))
    return False


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_model_call(node: ast.AST, data_names: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if not _MODEL_NAME.match(_last_name(node.func)) or isinstance(node.func, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda", "train", "eval"):
        return False
    args = [*node.args, *(k.value for k in node.keywords)]
    return any(_names_in(arg) & data_names for arg in args) if data_names else bool(args)


def _target_names(target: ast.AST, iterable: ast.AST) -> tuple[set[str], set[str]]:
    """(batch names, counter names) bound by a for-loop target."""
    counters: set[str] = set()
    if (
        isinstance(iterable, ast.Call)
        and _last_name(iterable.func) == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
    ):
        counters |= _names_in(target.elts[0])
        target = ast.Tuple(elts=target.elts[1:], ctx=ast.Store())
    names = _names_in(target)
    if isinstance(unwrap_iterable(iterable), ast.Call) and _last_name(unwrap_iterable(iterable)) == "range":
        return set(), counters | names
    return names, counters


def _propagate_batch_names(body: list[ast.stmt], names: set[str]) -> set[str]:
    """Names assigned from expressions over batch names (``x, y = batch``, ``x = x.to(d)``)."""
    result = set(names)
    for _ in range(2):
        for node in _own_nodes(body):
            if isinstance(node, ast.Assign) and _names_in(node.value) & result:
                for target in node.targets:
                    result |= _names_in(target)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if _last_name(node.value.func) == "next":
                    for target in node.targets:
                        result |= _names_in(target)
    return result


# --- rare guards --------------------------------------------------------------


def _is_modulo_guard(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mod):
            right = sub.right
            if isinstance(right, ast.Constant) and right.value == 1:
                continue
            if isinstance(sub.left, ast.Constant) and isinstance(sub.left.value, str):
                continue  # "%s" % x string formatting
            return True
    return False


def is_rare_guard(test: ast.AST, counters: set[str]) -> bool:
    """Whether an ``if`` test is true only on some steps (logging, last batch...)."""
    if isinstance(test, ast.BoolOp):
        parts = [is_rare_guard(value, counters) for value in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    if _is_modulo_guard(test):
        return True
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test)):
        return False  # `step % 1 == 0` is true every step
    if isinstance(test, ast.Compare) and any(isinstance(op, (ast.Eq, ast.Is)) for op in test.ops):
        operands = [test.left, *test.comparators]
        for operand in operands:
            names = _names_in(operand)
            if names & counters or any(_COUNTER_NAME.search(n) for n in names):
                return True
            if any(isinstance(n, ast.Call) and _last_name(n.func) == "len" for n in ast.walk(operand)):
                return True
    if isinstance(test, (ast.Name, ast.Attribute)):
        return bool(_FLAG_NAME.search(_last_name(test)))
    if isinstance(test, ast.Call) and isinstance(test.func, (ast.Name, ast.Attribute)):
        return bool(_FLAG_NAME.search(_last_name(test.func)))
    return False


# --- the finder -----------------------------------------------------------------


class _Finder:
    def __init__(self, ctx: "ModuleContext") -> None:
        self.ctx = ctx
        self.result = HotLoops()
        self.functions: dict[str, list[FunctionNode]] = {}
        self.loader_vars: set[str] = set()
        self._visited_functions: set[FunctionNode] = set()
        self._index_module()

    def _index_module(self) -> None:
        for node in ast.walk(self.ctx.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                qual = self.ctx.call_qualname(node.value) or ""
                if qual.endswith("DataLoader") or _LOADER_NAME.search(_last_name(node.value.func)):
                    for target in node.targets:
                        self.loader_vars |= {
                            _last_name(t) for t in ast.walk(target) if isinstance(t, (ast.Name, ast.Attribute))
                        }

    def loop_markers(self, loop: Loop) -> tuple[bool, bool]:
        """(is a step loop, trains) from the loop's own body."""
        trains = False
        step = False
        if isinstance(loop, (ast.For, ast.AsyncFor)) and _is_loader_like(loop.iter, self.loader_vars):
            step = True
        data_names: set[str] = set()
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            data_names = _target_names(loop.target, loop.iter)[0]
        for node in _own_nodes(loop.body):
            if is_backward_call(node) or is_optimizer_step(node):
                trains = step = True
            elif not step and data_names and _is_model_call(node, data_names):
                step = True
        return step, trains

    def run(self) -> HotLoops:
        loops: list[tuple[Loop, bool]] = []
        for node in ast.walk(self.ctx.tree):
            if isinstance(node, _LOOP_NODES):
                is_step, trains = self.loop_markers(node)
                if is_step:
                    loops.append((node, trains))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name in LIGHTNING_STEP_METHODS and self._is_method(node):
                    params = [a.arg for a in node.args.args if a.arg != "self"]
                    self._add_function(node, "lightning-step", set(params[:1]), set(params[1:2]), None)
        # Innermost loops first, so nested step loops (micro-batches) own their nodes.
        loops.sort(key=lambda item: -sum(1 for _ in self.ctx.ancestors(item[0])))
        for loop, trains in loops:
            self._add_loop(loop, trains)
        self.result.regions.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        self._find_epoch_loops({loop for loop, _ in loops})
        return self.result

    def _add_loop(self, loop: Loop, trains: bool) -> None:
        batch: set[str] = set()
        counters: set[str] = set()
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            batch, counters = _target_names(loop.target, loop.iter)
        batch = _propagate_batch_names(loop.body, batch)
        region = HotRegion("step-loop", loop, batch, counters, trains)
        self.result.regions.append(region)
        if isinstance(loop, ast.While):
            self._mark(loop.test, region)
        self._walk_body(loop.body, region)

    def _add_function(
        self,
        func: FunctionNode,
        kind: str,
        batch: set[str],
        counters: set[str],
        via: ast.Call | None,
    ) -> None:
        if func in self._visited_functions:
            return
        self._visited_functions.add(func)
        trains = any(is_backward_call(n) or is_optimizer_step(n) for n in _own_nodes(func.body))
        region = HotRegion(kind, func, _propagate_batch_names(func.body, batch), counters, trains, via)
        self.result.regions.append(region)
        self._walk_body(func.body, region)

    def _mark(self, node: ast.AST, region: HotRegion) -> None:
        """Mark an expression subtree (not nested scopes) as per-step."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current in self.result.per_step:
                continue
            self.result.per_step[current] = region
            if isinstance(current, ast.Call):
                self._follow_call(current, region)
            for child in ast.iter_child_nodes(current):
                if not isinstance(child, _SCOPE_NODES):
                    stack.append(child)

    def _walk_body(self, body: list[ast.stmt], region: HotRegion) -> None:
        for stmt in body:
            if isinstance(stmt, _SCOPE_NODES):
                continue
            if isinstance(stmt, ast.If) and is_rare_guard(stmt.test, region.counter_names):
                self.result.per_step.setdefault(stmt, region)
                self._mark(stmt.test, region)
                self._walk_body(stmt.orelse, region)
                continue
            if stmt in self.result.per_step and stmt is not region.node:
                continue
            self.result.per_step[stmt] = region
            for name, value in ast.iter_fields(stmt):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    if isinstance(stmt, _LOOP_NODES) and name == "orelse":
                        continue
                    self._walk_body(value, region)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.ExceptHandler):
                            self._walk_body(item.body, region)
                        elif isinstance(item, ast.AST):
                            self._mark(item, region)
                elif isinstance(value, ast.AST):
                    self._mark(value, region)

    def _follow_call(self, call: ast.Call, region: HotRegion) -> None:
        """A per-step call to a function of this file makes that function per-step."""
        func = call.func
        name: str | None = None
        candidates: list[FunctionNode] = []
        if isinstance(func, ast.Name):
            name = func.id
            candidates = [f for f in self.functions.get(name, []) if not self._is_method(f)]
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            name = func.attr
            owner = self._owner_class(region.node)
            candidates = [f for f in self.functions.get(name, []) if self._owner_class(f) is owner]
        for candidate in candidates:
            params = [a.arg for a in candidate.args.args if a.arg not in ("self", "cls")]
            batch = {
                param
                for param, arg in zip(params, call.args)
                if _names_in(arg) & region.batch_names
            }
            for keyword in call.keywords:
                if keyword.arg and _names_in(keyword.value) & region.batch_names:
                    batch.add(keyword.arg)
            self._add_function(candidate, "step-function", batch, set(), call)

    def _is_method(self, func: FunctionNode) -> bool:
        return isinstance(self.ctx.parents.get(func), ast.ClassDef)

    def _owner_class(self, node: ast.AST) -> ast.ClassDef | None:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                return ancestor
        return None

    def _find_epoch_loops(self, step_loops: set[ast.AST]) -> None:
        """Non-step loops that contain a step loop, directly or through a call."""
        functions_with_steps = {
            name
            for name, funcs in self.functions.items()
            if any(sub in step_loops for func in funcs for sub in ast.walk(func))
        }
        for node in ast.walk(self.ctx.tree):
            if not isinstance(node, _LOOP_NODES) or node in step_loops:
                continue
            for sub in ast.walk(node):
                if sub is not node and (
                    sub in step_loops
                    or (isinstance(sub, ast.Call) and _last_name(sub.func) in functions_with_steps)
                ):
                    self.result.epoch_loops.append(node)
                    break


def find_hot_loops(ctx: "ModuleContext") -> HotLoops:
    """Compute the per-step code of a module."""
    return _Finder(ctx).run()
