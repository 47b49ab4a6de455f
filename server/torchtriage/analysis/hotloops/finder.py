"""Which code runs once per training/eval step.

A *step loop* is a ``for``/``while`` loop whose own body (not counting nested
loops and definitions) calls ``backward()``, steps an optimizer, iterates a
DataLoader or loader-like iterable (``tqdm(loader)``, ``enumerate(loader)``,
``dataloaders[phase]``), or calls the model on the loop's data (including a
batch fetched in the body: ``x, y = get_batch()``, ``batch = next(it)``); the
full list is :mod:`.step_loops`'.  Loops that only contain step loops, directly
or through a call, are *epoch loops* and are not hot; neither are ``range`` loops
doing list work or loops over files that never call the model.

Per-step code is:

* the body of every step loop (nested step loops, such as nanoGPT's
  micro-step loop inside ``while True``, are step loops of their own);
* functions of the same file called from per-step code, transitively:
  ``train_step(batch)``, ``self.step_fn(batch)``, ``trainer.step(batch)``
  where ``trainer = Trainer(...)``, and helpers defined inside the loop;
* lambdas called per step (``to_np = lambda t: t.cpu().numpy()``; ``to_np(out)``)
  or handed to a per-step call (``map(lambda t: t.item(), (a, b))``);
* Lightning ``training_step`` / ``validation_step`` / ``test_step`` /
  ``predict_step`` and the per-batch hooks (``on_train_batch_end`` ...).

A function whose own loop is the step loop (``train_one_epoch``) is hot only
inside that loop: its set-up and summary code runs once per epoch.  A
``forward`` method is not followed (it is called through ``nn.Module``).

Statements under a rarely-true guard are not per-step: ``if step % 100 == 0``,
``if i == len(loader) - 1``, ``if last_batch or i % k == 0``, ``if should_log``,
``if divisible_by(step, every)`` with a modulo helper of the file; nor are the
bodies of branches that end the run or initialise lazily (see :mod:`.guards`).
A modulus of literal 1 is per-step; so are rank guards (``if rank == 0``,
``if is_main_process``), which hold on every step of the main process.

In a project (:mod:`..project.roles`), a script beside the training code that
takes no part in it has no step loops of its own, and a file other project files
import has none in its ``if __name__ == "__main__":`` block unless they train.

Gradient accumulation: a guard such as ``if (i + 1) % accum == 0:`` whose body
steps an optimizer, zeroes grads or runs backward is an *accumulation
boundary*, not a logging guard.  Its body runs once per optimizer step, which
is the step that matters for the optimizer, so it is per-step (recorded in
``HotLoops.accumulation_guards`` for rules that want to tell the two apart).
"""

from __future__ import annotations

import ast

from .guards import RUN_ENDERS, calls_modulo_helper, ends_the_run, flag_values, is_lazy_init, leaves_unless_modulo, modulo_helpers
from .regions import FunctionNode, HotEntry, HotLoops, HotRegion, Loop
from .reuse import keep_hot_loops, kept_hot_loops
from ..incremental.levels import child_nodes
from .loop_kinds import loop_facts
from ..incremental.memo import subtree_memo
from .step_loops import StepLoopJudge
from ..file_kinds import is_test_file
from ..module_index import ModuleIndex
from ..syntax import assigned_value, parameter_names, picked_from_dict, positional_before_starred, positional_parameters
from .epochs import epoch_loops
from .run_once import evaluates_once
from .step_markers import (
    _MODEL_NAME,
    LIGHTNING_BATCH_HOOKS,
    LIGHTNING_STEP_METHODS,
    LOOP_NODES,
    SCOPE_NODES,
    does_optimizer_work,
    incremented_counters,
    is_batch_fetch_name,
    is_bounded_guard,
    is_backward_call,
    is_loader_like,
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
    derived_counters,
)


_NOT_FOLLOWED = frozenset({"forward", "__call__"})

__all__ = [
    "HotEntry", "HotLoops", "HotRegion", "LIGHTNING_STEP_METHODS", "LIGHTNING_BATCH_HOOKS", "find_hot_loops",
    "is_backward_call", "is_optimizer_step", "is_rare_guard", "unwrap_iterable", "_MODEL_NAME",
    "RUN_ENDERS", "ends_the_run",
]


# --- the finder -------------------------------------------------------------------


class _Finder:
    def __init__(self, ctx: ModuleIndex, entries: tuple[HotEntry, ...] = (), own_loops: bool = True,
                 main_block: bool = True, step_loops: frozenset[int] = frozenset(), run_once: frozenset[str] = frozenset()) -> None:
        self.ctx = ctx
        self.run_once = run_once
        self.entries = entries
        self.step_loops = step_loops
        self.own_loops = own_loops
        self.main_block = main_block
        self.result = HotLoops()
        self.functions: dict[str, list[FunctionNode]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.instances: dict[str, str] = {}  # "trainer" / "self.engine" -> class name
        self.loader_vars: set[str] = set()
        self.lambdas: dict[str, list[ast.Lambda]] = {}  # ``to_np = lambda t: ...``
        self._visited_functions: set[FunctionNode | ast.Lambda] = set()
        self._function_regions: dict[FunctionNode, HotRegion] = {}
        self.loops: list[Loop] = []
        self.calls: list[ast.Call] = []
        self._picked: frozenset[str] | None = None  # see _picked_names
        self._index_module()
        self.judge = StepLoopJudge(ctx, self.loader_vars)

    def _index_module(self) -> None:
        """Definitions, loops, calls, instance and loader assignments, from the module's node indexes."""
        self.functions = self.ctx.functions
        self.calls = list(self.ctx.nodes_of(ast.Call))  # type: ignore[arg-type]
        self.loops = list(self.ctx.nodes_of(LOOP_NODES))  # type: ignore[arg-type]
        for node in self.ctx.nodes_of(ast.ClassDef):
            self.classes[node.name] = node  # type: ignore[attr-defined, assignment]
        self.modulo_helpers = modulo_helpers(self.ctx)
        for node in self.ctx.nodes_of(ast.Assign):
            assert isinstance(node, ast.Assign)
            facts = subtree_memo(node, "hot_assign_facts", lambda node=node: self._assign_facts(node))  # type: ignore[misc]
            if facts is None:
                continue
            lambda_name, callee, keys, loader_names = facts
            if lambda_name is not None:
                self.lambdas.setdefault(lambda_name, []).append(node.value)  # type: ignore[arg-type]
            if callee in self.classes:
                for key in keys:
                    self.instances[key] = callee
            self.loader_vars |= loader_names

    def _assign_facts(self, node: ast.Assign) -> tuple[str | None, str | None, tuple[str, ...], frozenset[str]] | None:
        """What an assignment tells the finder, from its own subtree: the name a lambda is bound
        to, the callee whose result it binds (an instance if a class of the file) and the dotted
        targets, and the names bound to a loader; None for nothing."""
        value = node.value
        if isinstance(value, ast.Lambda) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id, None, (), frozenset()
        if not isinstance(value, ast.Call):
            return None
        keys = tuple(key for key in map(self.ctx.dotted, node.targets) if key)
        loader_names: frozenset[str] = frozenset()
        if is_loader_like(value, set()):
            loader_names = frozenset(
                last_name(t) for target in node.targets for t in ast.walk(target) if isinstance(t, (ast.Name, ast.Attribute))
            )
        return None, last_name(value.func), keys, loader_names

    def run(self) -> HotLoops:
        loops: list[tuple[Loop, bool, int]] = []
        for node in self.loops if self.own_loops else ():
            is_step, trains = (True, True) if node.lineno in self.step_loops else self.judge.markers(node)
            if is_step and not self.main_block and not trains and in_main_block(self.ctx, node):
                continue  # a library file's self-test or demo: not a training step
            if is_step and not trains and self.run_once and evaluates_once(self.ctx, node, self.run_once) \
                    and not self.judge.loop_steps_through_calls(node):
                continue  # the final evaluation of a function the project runs once: one pass, not per step
            if is_step:
                loops.append((node, trains, sum(1 for _ in self.ctx.ancestors(node))))
        hooks = [f for name in LIGHTNING_STEP_METHODS | LIGHTNING_BATCH_HOOKS for f in self.functions.get(name, ())]
        if not self.own_loops:
            hooks = []
        hooks = sorted((f for f in hooks if self.ctx.is_method(f)), key=lambda f: (f.lineno, f.col_offset))
        inputs = self._inputs(loops, hooks)
        kept = kept_hot_loops(self.ctx, inputs)
        if kept is not None:  # the edit touched none of it (see :mod:`.hot_reuse`)
            self.result = kept
            kept.regions.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        else:
            self._mark_regions(loops, hooks)
            keep_hot_loops(self.ctx, inputs, self.result)
        self.result.epoch_loops = epoch_loops(self.ctx, self.calls, {loop for loop, _, _ in loops})
        return self.result

    def _inputs(self, loops: list[tuple[Loop, bool, int]], hooks: list[FunctionNode]) -> tuple[object, ...]:
        """What marking the regions reads outside their own subtrees (see :mod:`.hot_reuse`)."""
        return (
            self.ctx.path,
            getattr(self.ctx, "path_label", None),
            tuple(sorted(self.ctx.aliases.items())),
            self.entries,
            self.step_loops,
            tuple(loops),
            tuple(hooks),
            tuple((name, tuple(nodes)) for name, nodes in self.functions.items()),
            tuple(self.classes.items()),
            tuple(sorted(self.instances.items())),
            tuple((name, tuple(nodes)) for name, nodes in self.lambdas.items()),
            frozenset(self.loader_vars),
            self.modulo_helpers,
            tuple(frozenset(self._batch_params_around(loop)) for loop, _, _ in loops),
        )

    def _mark_regions(self, loops: list[tuple[Loop, bool, int]], hooks: list[FunctionNode]) -> None:
        """Mark the per-step code reached from the step loops, the Lightning hooks and the entries."""
        for func in hooks:
            self._maybe_lightning(func)
        # Innermost loops first, so nested step loops (micro-batches) own their nodes.
        for loop, trains, _depth in sorted(loops, key=lambda item: -item[2]):
            self._add_loop(loop, trains)
        for entry in self.entries:  # per-step bodies called from other files of the project
            self._add_function(entry.func, "step-function", set(entry.batch), set(), None, entry.hot_path)
        self.result.regions.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        self._propagate_trains()

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
        counters |= derived_counters(loop.body, counters)  # ``ni = i + nb * epoch``
        batch = set(loop_facts(loop).data_names) or propagate_batch_names(loop.body, batch)
        if not batch:  # ``for i in range(0, batch.shape[0], micro): x = batch[i : i + micro]``
            batch = propagate_batch_names(loop.body, self._batch_params_around(loop))
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
            known = self._function_regions.get(func)
            if known is not None and batch - known.batch_names:  # another per-step caller hands it step data
                known.batch_names |= propagate_batch_names(func.body, batch)
            return
        self._visited_functions.add(func)
        trains = any(is_backward_call(n) or is_optimizer_step(n) for n in own_nodes(func.body))
        if is_batch_fetch_name(func.name):  # ``def next_batch(self): ... return x.cuda(), y.cuda()``: it makes the step's batch
            batch = batch | _returned_names(func)
        region = HotRegion(kind, func, propagate_batch_names(func.body, batch), counters, trains, via, hot_path)
        self._function_regions[func] = region
        self.result.regions.append(region)
        self._walk_body(func.body, region)

    def _batch_params_around(self, loop: Loop) -> set[str]:
        """Parameters of the function holding a loop that look like batch data (``batch``, ``images``)."""
        func = self.ctx.enclosing_function(loop)
        if func is None:
            return set()
        return {a.arg for a in [*func.args.posonlyargs, *func.args.args] if looks_like_batch_param(a.arg)}

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
                elif isinstance(child, ast.Lambda) and isinstance(current, ast.Call):
                    self._inline_lambda(child, current, region)

    def _inline_lambda(self, lam: ast.Lambda, call: ast.Call, region: HotRegion) -> None:
        """``map(lambda t: t.item(), (a, b))``, ``sorted(xs, key=lambda v: v.sum())``: a lambda handed to
        a per-step call runs every step; its parameters get step data when the call's other arguments do."""
        others = [a for a in [*call.args, *(k.value for k in call.keywords)] if a is not lam]
        carries = any(names_in(a) & region.batch_names for a in others)
        params = {a.arg for a in lam.args.args} if carries else set()
        self._add_lambda(lam, params, call, self._extend_path(call, region))

    def _add_lambda(self, lam: ast.Lambda, batch: set[str], via: ast.Call, hot_path: tuple[str, ...]) -> None:
        if lam in self._visited_functions:
            return
        self._visited_functions.add(lam)
        region = HotRegion("step-function", lam, set(batch), set(), False, via, hot_path)
        self.result.regions.append(region)
        self._mark(lam.body, region)

    def _extend_path(self, call: ast.Call, region: HotRegion) -> tuple[str, ...]:
        if not region.hot_path:
            return ()
        return region.hot_path + (f"{getattr(self.ctx, 'path_label', None) or self.ctx.path}:{call.lineno}",)

    def _rare_flag(self, stmt: ast.If, region: HotRegion) -> bool:
        """``if is_metric_step:`` with ``is_metric_step = (i % every == 0) or last_batch`` set before it: a name in
        the test is as rare as its name says, or as the value last assigned to it (:func:`.guards.flag_values`)."""
        value_of = flag_values(self.ctx, stmt)
        counters = region.counter_names

        def rare(test: ast.expr, depth: int) -> bool:
            if isinstance(test, ast.BoolOp):
                parts = [rare(v, depth) for v in test.values]
                return any(parts) if isinstance(test.op, ast.And) else all(parts)
            if isinstance(test, ast.Name):
                value = value_of(test.id) if depth < 3 else None
                return is_rare_guard(test, counters) or (value is not None and rare(value, depth + 1))
            return is_rare_guard(test, counters) or calls_modulo_helper(test, self.modulo_helpers)

        return isinstance(stmt.test, (ast.Name, ast.BoolOp)) and rare(stmt.test, 0)

    def _modulus_defaults_to_one(self, test: ast.expr) -> bool:
        """``if iter % args.print_every == 0:`` where ``--print_every`` defaults to 1 (an argparse or config default
        of the project): the guard holds on every step of a default run."""
        default_of = getattr(self.ctx, "attribute_default", None)  # a ModuleContext's (argparse, config classes)
        if default_of is None:
            return False
        for node in ast.walk(test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.right, ast.Attribute):
                default = default_of(node.right.attr)
                if default is not None and default.value == 1 and type(default.value) is int:
                    return True
        return False

    def _is_rare(self, stmt: ast.If, region: HotRegion) -> bool:
        if is_lazy_init(stmt) or ends_the_run(self.ctx, stmt.body, stmt.test):
            self.result.rare_guards.append(stmt)
            return True
        if self._tests_an_inner_index(stmt, region) or self._modulus_defaults_to_one(stmt.test):
            return False
        if not (
            is_rare_guard(stmt.test, region.counter_names) or is_bounded_guard(stmt)
            or calls_modulo_helper(stmt.test, self.modulo_helpers) or self._rare_flag(stmt, region)
        ):
            return False
        if subtree_memo(stmt, "does_optimizer_work", lambda: does_optimizer_work(stmt.body) or self.judge.block_steps_through_calls(stmt)):
            self.result.accumulation_guards.append(stmt)
            return False
        self.result.rare_guards.append(stmt)
        return True

    def _tests_an_inner_index(self, stmt: ast.If, region: HotRegion) -> bool:
        """``if idx == 0:`` where ``idx`` counts a loop inside the per-step code (``for idx, t in
        enumerate(inputs)``), not the steps: that loop runs again every step, and so does the branch."""
        test = stmt.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
                and all(isinstance(c, ast.Constant) for c in test.comparators)):
            return False
        for ancestor in self.ctx.ancestors(stmt):
            if ancestor is region.node or isinstance(ancestor, SCOPE_NODES):
                return False
            if isinstance(ancestor, (ast.For, ast.AsyncFor)) and test.left.id in target_names(ancestor.target, ancestor.iter)[1]:
                return True
        return False

    def _walk_body(self, body: list[ast.stmt], region: HotRegion) -> None:
        for index, stmt in enumerate(body):
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
            if isinstance(stmt, ast.If) and leaves_unless_modulo(stmt) and not does_optimizer_work(body[index + 1 :]):
                self.result.rare_guards.append(stmt)
                return  # ``if total % every: return``: what follows runs every N steps

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
        hot_path = self._extend_path(call, region)
        if isinstance(call.func, ast.Name) and call.func.id in self.lambdas and call.func.id not in self.functions:
            for lam in self.lambdas[call.func.id]:  # ``to_np = lambda t: t.cpu().numpy()``; ``to_np(out)``
                params = [a.arg for a in lam.args.args]
                batch = {p for p, arg in zip(params, positional_before_starred(call.args)) if names_in(arg) & region.batch_names}
                self._add_lambda(lam, batch, call, hot_path)
        for arg in call.args:
            if isinstance(arg, ast.Name):
                for func in self.functions.get(arg.id, ()):
                    if not self.ctx.is_method(func):
                        self._add_function(func, "step-function", set(), set(), call, hot_path)
        for candidate in self._callees(call, region):
            if candidate.name in _NOT_FOLLOWED:
                continue
            params = [a.arg for a in candidate.args.args if a.arg not in ("self", "cls")]
            batch = {
                param for param, arg in positional_parameters(candidate.args, call)
                if names_in(arg) & region.batch_names and not is_shape_read(arg)
            }
            for keyword in call.keywords:
                if keyword.arg and names_in(keyword.value) & region.batch_names and not is_shape_read(keyword.value):
                    batch.add(keyword.arg)
            if not batch:
                batch = {p for p in params if looks_like_batch_param(p)}
            self._add_function(candidate, "step-function", batch, set(), call, hot_path)

    def _picked_names(self) -> frozenset[str]:
        """Names the file assigns a value picked from a dict literal (found once, on first use)."""
        if self._picked is None:
            self._picked = frozenset(
                target.id for node in self.ctx.nodes_of(ast.Assign) if picked_from_dict(node.value)  # type: ignore[attr-defined]
                for target in node.targets if isinstance(target, ast.Name)  # type: ignore[attr-defined]
            )
        return self._picked

    def _callees(self, call: ast.Call, region: HotRegion) -> list[FunctionNode]:
        func = call.func
        if isinstance(func, ast.Name) and func.id not in self.functions and func.id in self._picked_names():
            scope = self.ctx.enclosing_function(call) or self.ctx.tree  # ``mix = {"feat": feat_mix, ...}[mode]``
            picked = picked_from_dict(assigned_value(scope, func.id))
            return [f for v in picked if isinstance(v, ast.Name) for f in self.functions.get(v.id, []) if not self.ctx.is_method(f)]
        if isinstance(func, ast.Name):
            return [f for f in self.functions.get(func.id, []) if not self.ctx.is_method(f)]
        if not isinstance(func, ast.Attribute):
            return []
        receiver = self.ctx.dotted(func.value)
        if receiver == "self":
            owner = self.ctx.enclosing_class(region.node)
        elif receiver in self.instances:
            owner = self.classes.get(self.instances[receiver])
        else:
            return []
        return [f for f in self.functions.get(func.attr, []) if owner is not None and self.ctx.parents.get(f) is owner]


def find_hot_loops(ctx: ModuleIndex, entries: tuple[HotEntry, ...] = (), own_loops: bool = True,
                   main_block: bool = True, step_loops: frozenset[int] = frozenset(),
                   run_once: frozenset[str] = frozenset()) -> HotLoops:
    """Compute the per-step code of a module (none in test modules: their loops check
    behaviour, not speed, and an ``assert`` on a tensor is what a test is for).

    ``entries`` are functions of this module that other files of the project call once per
    step (see :mod:`.project`); they are per-step like a same-file ``train_step``.
    ``own_loops`` False: the module's own loops and Lightning hooks are not step code (a script
    beside a project's training code, :mod:`.project.roles`); only ``entries`` are.
    ``main_block`` False: the loops of its ``if __name__ == "__main__":`` block that do not train
    are not step code either (a file other project files import: the block is a self-test or demo).
    ``step_loops``: lines of loops the project knows run one training step per pass through another
    file's function (``algorithm.update(minibatches)``, :func:`.project.links.loops_training_elsewhere`).
    ``run_once``: names of this module's functions the project runs once, outside every loop (:mod:`.project.run_once`):
    their loops that evaluate (the model in eval mode, or grad off) and are not nested in another of their loops
    run one pass in the whole run (the final test), not per step."""
    if is_test_file(ctx.path, ctx.source):
        return HotLoops()
    return _Finder(ctx, entries, own_loops, main_block, step_loops, run_once).run()


def in_main_block(ctx: ModuleIndex, node: ast.AST) -> bool:
    """Whether ``node`` is inside a top-level ``if __name__ == "__main__":`` block."""
    top = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.Module):
            break
        top = ancestor
    return isinstance(top, ast.If) and _is_main_test(top.test)


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _returned_names(func: FunctionNode) -> set[str]:
    """The local names a function's own ``return`` statements hand back as results (``x``, ``y`` of ``return x.cuda(),
    y.cuda()``; both branches of ``x if ... else x[::-1]``, not its test), its parameters left out."""
    names: set[str] = set()
    for node in own_nodes(func.body):
        if isinstance(node, ast.Return) and node.value is not None:
            names |= _result_names(node.value)
    return names - set(parameter_names(func.args))


def _result_names(expr: ast.AST) -> set[str]:
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, (ast.Tuple, ast.List)):
        return set().union(*(_result_names(e) for e in expr.elts)) if expr.elts else set()
    if isinstance(expr, ast.IfExp):
        return _result_names(expr.body) | _result_names(expr.orelse)
    if isinstance(expr, (ast.Subscript, ast.Starred)):
        return _result_names(expr.value)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):  # ``x.cuda()``, ``x.view(B, T)``
        return _result_names(expr.func.value)
    return set()
