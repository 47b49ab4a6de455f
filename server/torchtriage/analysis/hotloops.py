"""Which code runs once per training/eval step.

A *step loop* is a ``for``/``while`` loop whose own body (not counting nested
loops and definitions) calls ``backward()``, steps an optimizer, iterates a
DataLoader or loader-like iterable (``tqdm(loader)``, ``enumerate(loader)``,
``dataloaders[phase]``), or calls the model on the loop's data (including a
batch fetched in the body: ``x, y = get_batch()``, ``batch = next(it)``).
Loops that only contain step loops, directly or through a call, are
*epoch loops* and are not hot; neither are ``range`` loops doing list work or
loops over files that never call the model.

Per-step code is:

* the body of every step loop (nested step loops, such as nanoGPT's
  micro-step loop inside ``while True``, are step loops of their own);
* functions of the same file called from per-step code, transitively:
  ``train_step(batch)``, ``self.step_fn(batch)``, ``trainer.step(batch)``
  where ``trainer = Trainer(...)``, and helpers defined inside the loop;
* Lightning ``training_step`` / ``validation_step`` / ``test_step`` /
  ``predict_step`` and the per-batch hooks (``on_train_batch_end`` ...).

A function whose own loop is the step loop (``train_one_epoch``) is hot only
inside that loop: its set-up and summary code runs once per epoch.  A
``forward`` method is not followed (it is called through ``nn.Module``).

Statements under a rarely-true guard are not per-step: ``if step % 100 == 0``,
``if i == len(loader) - 1``, ``if last_batch or i % k == 0``, ``if should_log``.
A modulus of literal 1 is per-step; so are rank guards (``if rank == 0``,
``if is_main_process``), which hold on every step of the main process.

Gradient accumulation: a guard such as ``if (i + 1) % accum == 0:`` whose body
steps an optimizer, zeroes grads or runs backward is an *accumulation
boundary*, not a logging guard.  Its body runs once per optimizer step, which
is the step that matters for the optimizer, so it is per-step (recorded in
``HotLoops.accumulation_guards`` for rules that want to tell the two apart).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, TypeVar

from .levels import child_nodes
from .memo import subtree_memo
from .file_kinds import is_test_file
from .module_index import ModuleIndex
from .step_markers import (
    _MODEL_NAME,
    LOOP_NODES,
    SCOPE_NODES,
    does_optimizer_work,
    incremented_counters,
    is_bounded_guard,
    is_backward_call,
    is_loader_like,
    is_model_call,
    is_optimizer_step,
    is_rare_guard,
    is_shape_read,
    last_name,
    looks_like_batch_param,
    names_in,
    own_nodes,
    propagate_batch_names,
    target_names,
    unwrap_iterable,
)

Loop = ast.For | ast.AsyncFor | ast.While
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

LIGHTNING_STEP_METHODS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
LIGHTNING_BATCH_HOOKS = frozenset(
    {
        f"on_{stage}_batch_{when}"
        for stage in ("train", "validation", "test", "predict")
        for when in ("start", "end")
    }
    | {"on_before_backward", "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad",
       "optimizer_step", "optimizer_zero_grad", "training_step_end", "validation_step_end", "test_step_end"}
)
_NOT_FOLLOWED = frozenset({"forward", "__call__"})

T = TypeVar("T", bound=ast.AST)

__all__ = [
    "HotEntry", "HotLoops", "HotRegion", "LIGHTNING_STEP_METHODS", "LIGHTNING_BATCH_HOOKS", "find_hot_loops",
    "is_backward_call", "is_optimizer_step", "is_rare_guard", "unwrap_iterable", "_MODEL_NAME",
]


@dataclass(eq=False)
class HotRegion:
    """A piece of code that runs once per step: a step loop or a per-step function."""

    kind: str  # "step-loop" | "step-function" | "lightning-step"
    node: Loop | FunctionNode
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


# --- facts of one loop or function (its own subtree only: cached on the node) ---------


@dataclass(frozen=True)
class _LoopFacts:
    data_names: frozenset[str]  # batch names bound by the loop and propagated through its body
    trains: bool  # its own body runs backward or steps an optimizer
    calls_model: bool  # its own body calls the model on the loop's data
    called_names: tuple[str, ...]  # plain-name functions its own body calls, in order
    model_callees: tuple[str | None, ...] = ()  # for the model calls: the plain name called, else None


def _loop_facts(loop: Loop) -> _LoopFacts:
    def compute() -> _LoopFacts:
        data_names: set[str] = set()
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            data_names = target_names(loop.target, loop.iter)[0]
        data_names = propagate_batch_names(loop.body, data_names)
        own = list(own_nodes(loop.body))
        model_calls = [n for n in own if is_model_call(n, data_names)]
        return _LoopFacts(
            frozenset(data_names),
            any(is_backward_call(n) or is_optimizer_step(n) for n in own),
            bool(model_calls),
            tuple(dict.fromkeys(n.func.id for n in own if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))),
            tuple(n.func.id if isinstance(n.func, ast.Name) else None for n in model_calls),  # type: ignore[attr-defined]
        )

    return subtree_memo(loop, "loop_facts", compute)


def _before_starred(args: list[ast.expr]) -> list[ast.expr]:
    """Positional arguments up to the first ``*args``: after it, positions are unknown."""
    for index, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            return args[:index]
    return args


def _is_step_function(func: FunctionNode) -> bool:
    params = {a.arg for a in func.args.args if looks_like_batch_param(a.arg)}
    data = propagate_batch_names(func.body, params) if params else set()
    return any(
        is_backward_call(n) or is_optimizer_step(n) or (data and is_model_call(n, data)) for n in own_nodes(func.body)
    )


RUN_ENDERS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


def ends_the_run(ctx: ModuleIndex, body: list[ast.stmt]) -> bool:
    """A branch that stops the program (``raise`` or ``sys.exit(...)`` among its statements):
    it runs at most once, so its body is not per-step (its test still is)."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            if ctx.call_qualname(stmt.value) in RUN_ENDERS:
                return True
    return False


def _is_none_test(test: ast.expr) -> str | None:
    if (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    ):
        return ast.unparse(test.left)
    return None


def _is_lazy_init(stmt: ast.If) -> bool:
    """``if bank is None: bank = torch.zeros(...).cuda()``: one-time initialisation, true once.

    Also ``if not hasattr(self, "bank"): self.bank = ...``.  Only without an ``else`` branch."""
    if stmt.orelse:
        return False
    test = stmt.test
    target: str | None = _is_none_test(test)
    if target is None and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        # ``if rank == 0 and bank is None:`` still initialises once
        target = next((t for t in map(_is_none_test, test.values) if t is not None), None)
    if target is not None:
        pass
    elif (
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


# --- the finder -------------------------------------------------------------------


class _Finder:
    def __init__(self, ctx: ModuleIndex, entries: tuple[HotEntry, ...] = ()) -> None:
        self.ctx = ctx
        self.entries = entries
        self.result = HotLoops()
        self.functions: dict[str, list[FunctionNode]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.instances: dict[str, str] = {}  # "trainer" / "self.engine" -> class name
        self.loader_vars: set[str] = set()
        self._visited_functions: set[FunctionNode] = set()
        self.loops: list[Loop] = []
        self._loop_data: dict[Loop, set[str]] = {}  # batch names found while classifying loops
        self.calls: list[ast.Call] = []
        self._index_module()

    def _index_module(self) -> None:
        """Definitions, loops, calls, instance and loader assignments, from the module's node indexes."""
        self.functions = self.ctx.functions
        self.calls = list(self.ctx.nodes_of(ast.Call))  # type: ignore[arg-type]
        self.loops = list(self.ctx.nodes_of(LOOP_NODES))  # type: ignore[arg-type]
        for node in self.ctx.nodes_of(ast.ClassDef):
            self.classes[node.name] = node  # type: ignore[attr-defined, assignment]
        assigns = [n for n in self.ctx.nodes_of(ast.Assign) if isinstance(n.value, ast.Call)]  # type: ignore[attr-defined]
        for node in assigns:
            call = node.value
            assert isinstance(call, ast.Call)
            callee = last_name(call.func)
            if callee in self.classes:
                for target in node.targets:
                    key = self.ctx.dotted(target)
                    if key:
                        self.instances[key] = callee
            if is_loader_like(call, set()):
                for target in node.targets:
                    self.loader_vars |= {
                        last_name(t) for t in ast.walk(target) if isinstance(t, (ast.Name, ast.Attribute))
                    }

    def loop_markers(self, loop: Loop) -> tuple[bool, bool]:
        """(is a step loop, trains) from the loop's own body."""
        facts = _loop_facts(loop)
        self._loop_data[loop] = set(facts.data_names)
        if facts.trains:
            return True, True
        step = isinstance(loop, (ast.For, ast.AsyncFor)) and is_loader_like(loop.iter, self.loader_vars)
        if not step and self._calls_model(facts) and self._enclosing_name(loop) not in _NOT_FOLLOWED:
            step = True
        if not step:
            step = any(self._is_step_function(f) for name in facts.called_names for f in self.functions.get(name, ()))
        return step, False

    def _calls_model(self, facts: _LoopFacts) -> bool:
        """A model call among the loop's own calls; ``validate_network(loader, model)`` or
        ``render_with_model(model, noise)`` is a function of this file or an imported one, not a
        module's forward (whether it does per-step work is :meth:`_is_step_function`'s question)."""
        return any(
            name is None or (name not in self.functions and name not in self.ctx.aliases)
            for name in facts.model_callees
        )

    def _is_step_function(self, func: FunctionNode) -> bool:
        """A function whose own body (not its loops) trains or calls the model on its batch params:
        a loop calling it once per iteration is a step loop (``for b in data: train_step(b)``)."""
        return subtree_memo(func, "is_step_function", lambda: _is_step_function(func))

    def run(self) -> HotLoops:
        loops: list[tuple[Loop, bool, int]] = []
        for node in self.loops:
            is_step, trains = self.loop_markers(node)
            if is_step:
                loops.append((node, trains, sum(1 for _ in self.ctx.ancestors(node))))
        hooks = [f for name in LIGHTNING_STEP_METHODS | LIGHTNING_BATCH_HOOKS for f in self.functions.get(name, ())]
        for func in sorted(hooks, key=lambda f: (f.lineno, f.col_offset)):
            if self._is_method(func):
                self._maybe_lightning(func)
        # Innermost loops first, so nested step loops (micro-batches) own their nodes.
        loops.sort(key=lambda item: -item[2])
        for loop, trains, _depth in loops:
            self._add_loop(loop, trains)
        for entry in self.entries:  # per-step bodies called from other files of the project
            self._add_function(entry.func, "step-function", set(entry.batch), set(), None, entry.hot_path)
        self.result.regions.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        self._propagate_trains()
        self._find_epoch_loops({loop for loop, _, _ in loops})
        return self.result

    def _propagate_trains(self) -> None:
        """A step whose helper (``_backward(loss)``) runs backward trains too."""
        changed = True
        while changed:
            changed = False
            for region in self.result.regions:
                caller = self.result.per_step.get(region.via) if region.via is not None else None
                if region.trains and caller is not None and not caller.trains:
                    caller.trains = changed = True

    def _maybe_lightning(self, func: FunctionNode) -> None:
        params = [a.arg for a in func.args.args if a.arg != "self"]
        if func.name in LIGHTNING_STEP_METHODS:
            self._add_function(func, "lightning-step", set(params[:1]), set(params[1:2]), None)
        elif func.name in LIGHTNING_BATCH_HOOKS:
            batch = {p for p in params if looks_like_batch_param(p)}
            counters = {p for p in params if p.endswith("idx")}
            self._add_function(func, "lightning-step", batch, counters, None)

    def _add_loop(self, loop: Loop, trains: bool) -> None:
        batch: set[str] = set()
        counters: set[str] = set()
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            batch, counters = target_names(loop.target, loop.iter)
        counters = counters or incremented_counters(loop.body)  # while loops: `step += 1`
        batch = self._loop_data.get(loop) or propagate_batch_names(loop.body, batch)
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
        hot_path: tuple[str, ...] = (),
    ) -> None:
        if func in self._visited_functions:
            return
        self._visited_functions.add(func)
        trains = any(is_backward_call(n) or is_optimizer_step(n) for n in own_nodes(func.body))
        region = HotRegion(kind, func, propagate_batch_names(func.body, batch), counters, trains, via, hot_path)
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
            for child in child_nodes(current):
                if not isinstance(child, SCOPE_NODES):
                    stack.append(child)

    def _is_rare(self, stmt: ast.If, region: HotRegion) -> bool:
        if _is_lazy_init(stmt) or ends_the_run(self.ctx, stmt.body):
            self.result.rare_guards.append(stmt)
            return True
        if not (is_rare_guard(stmt.test, region.counter_names) or is_bounded_guard(stmt)):
            return False
        if subtree_memo(stmt, "does_optimizer_work", lambda: does_optimizer_work(stmt.body)):
            self.result.accumulation_guards.append(stmt)
            return False
        self.result.rare_guards.append(stmt)
        return True

    def _walk_body(self, body: list[ast.stmt], region: HotRegion) -> None:
        for stmt in body:
            if isinstance(stmt, SCOPE_NODES):
                continue
            if stmt in self.result.per_step and stmt is not region.node:
                continue
            if isinstance(stmt, ast.If) and self._is_rare(stmt, region):
                self.result.per_step[stmt] = region
                self._mark(stmt.test, region)
                self._walk_body(stmt.orelse, region)
                continue
            self.result.per_step[stmt] = region
            for value in ast.iter_fields(stmt):
                self._walk_field(value[1], region)

    def _walk_field(self, value: object, region: HotRegion) -> None:
        if isinstance(value, list):
            if value and isinstance(value[0], ast.stmt):
                self._walk_body(value, region)
                return
            for item in value:
                if isinstance(item, ast.ExceptHandler):
                    self.result.per_step.setdefault(item, region)
                    self._walk_body(item.body, region)
                elif isinstance(item, ast.match_case):
                    self._walk_body(item.body, region)
                elif isinstance(item, ast.AST):
                    self._mark(item, region)
        elif isinstance(value, ast.AST):
            self._mark(value, region)

    def _follow_call(self, call: ast.Call, region: HotRegion) -> None:
        """A per-step call to a function of this file makes that function per-step; so does
        passing one (``optimizer.step(closure)``)."""
        hot_path = region.hot_path + (f"{getattr(self.ctx, 'path_label', None) or self.ctx.path}:{call.lineno}",) if region.hot_path else ()
        for arg in call.args:
            if isinstance(arg, ast.Name):
                for func in self.functions.get(arg.id, ()):
                    if not self._is_method(func):
                        self._add_function(func, "step-function", set(), set(), call, hot_path)
        for candidate in self._callees(call, region):
            if candidate.name in _NOT_FOLLOWED:
                continue
            params = [a.arg for a in candidate.args.args if a.arg not in ("self", "cls")]
            batch = {
                param for param, arg in zip(params, _before_starred(call.args))
                if names_in(arg) & region.batch_names and not is_shape_read(arg)
            }
            for keyword in call.keywords:
                if keyword.arg and names_in(keyword.value) & region.batch_names and not is_shape_read(keyword.value):
                    batch.add(keyword.arg)
            if not batch:
                batch = {p for p in params if looks_like_batch_param(p)}
            self._add_function(candidate, "step-function", batch, set(), call, hot_path)

    def _callees(self, call: ast.Call, region: HotRegion) -> list[FunctionNode]:
        func = call.func
        if isinstance(func, ast.Name):
            return [f for f in self.functions.get(func.id, []) if not self._is_method(f)]
        if not isinstance(func, ast.Attribute):
            return []
        receiver = self.ctx.dotted(func.value)
        if receiver == "self":
            owner = self._owner_class(region.node)
        elif receiver in self.instances:
            owner = self.classes.get(self.instances[receiver])
        else:
            return []
        return [f for f in self.functions.get(func.attr, []) if owner is not None and self.ctx.parents.get(f) is owner]

    def _is_method(self, func: FunctionNode) -> bool:
        return isinstance(self.ctx.parents.get(func), ast.ClassDef)

    def _owner_class(self, node: ast.AST) -> ast.ClassDef | None:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, ast.ClassDef):
                return ancestor
        return None

    def _enclosing_name(self, node: ast.AST) -> str | None:
        func = self.ctx.enclosing_function(node)
        return func.name if func is not None else None

    def _find_epoch_loops(self, step_loops: set[ast.AST]) -> None:
        """Non-step loops that contain a step loop, directly or through a call of this file."""
        epoch: dict[ast.AST, None] = {}
        holders: set[str] = set()
        for loop in step_loops:
            for ancestor in self.ctx.ancestors(loop):
                if isinstance(ancestor, LOOP_NODES) and ancestor not in step_loops:
                    epoch[ancestor] = None
                elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    holders.add(ancestor.name)
        if holders:
            for node in self.calls:
                if last_name(node.func) in holders:
                    for ancestor in self.ctx.ancestors(node):
                        if isinstance(ancestor, LOOP_NODES) and ancestor not in step_loops:
                            epoch[ancestor] = None
        self.result.epoch_loops = sorted(epoch, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[arg-type]


def find_hot_loops(ctx: ModuleIndex, entries: tuple[HotEntry, ...] = ()) -> HotLoops:
    """Compute the per-step code of a module (none in test modules: their loops check
    behaviour, not speed, and an ``assert`` on a tensor is what a test is for).

    ``entries`` are functions of this module that other files of the project call once per
    step (see :mod:`.project`); they are per-step like a same-file ``train_step``."""
    if is_test_file(ctx.path):
        return HotLoops()
    return _Finder(ctx, entries).run()
