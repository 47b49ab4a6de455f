"""Whether a loop is a step loop: the judgement :mod:`.hotloops` starts from.

A loop is a step loop when its own body trains (``backward()``, an optimizer
step), iterates a DataLoader or loader-like iterable, calls the model on its data,
calls a step function of this file (``train_step(batch)``, ``self.run_step(batch)``),
fetches a batch (``next(it)``) and hands it to a function of this file that trains,
or walks a tensor in strided chunks with torch ops (``for i in range(0, n, chunk):
torch.mm(feats[i : i + chunk], bank)``).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterable

from ..incremental.walks import scope_entries, scope_walk
from .regions import FunctionNode, Loop
from .loop_kinds import RANGES, LoopFacts, is_step_function, loop_facts, trains_anywhere
from ..module_index import ModuleIndex
from ..syntax import parameter_names
from .step_markers import (
    ITERABLE_WRAPPERS, LOOP_NODES, SCOPE_NODES, is_loader_like, is_optimizer_step, last_name, own_nodes, unwrap_iterable,
)

_NOT_FOLLOWED = frozenset({"forward", "__call__"})
_LIST_BUILDERS = frozenset({"list", "sorted", "tuple"}) | ITERABLE_WRAPPERS  # calls whose result is a list of their argument's items


# functions that serve a trained model (a library's ``predict`` API, an ``--do_predict`` pass): their loops
# over data are inference, and do not run while training
_INFERENCE_NAME = re.compile(r"^(predict|predict_proba|inference|infer|run_inference)$")


def ends_first_pass(last: ast.stmt) -> bool:
    """A loop body's last statement that leaves the loop: ``break``, ``return``, or a ``try`` whose work or
    ``else`` ends with one (``while size: try: step(size) except OOM: size //= 2 else: break``)."""
    if isinstance(last, (ast.Break, ast.Return)):
        return True
    if isinstance(last, ast.Try):
        return any(block and isinstance(block[-1], (ast.Break, ast.Return)) for block in (last.body, last.orelse))
    return False


class StepLoopJudge:
    """Classifies the loops of one module (caching what it learns about its functions)."""

    def __init__(self, ctx: ModuleIndex, loader_vars: set[str]) -> None:
        self.ctx = ctx
        self.functions = ctx.functions
        self.loader_vars = loader_vars
        self._trains_through: dict[FunctionNode, bool] = {}
        self._steps_through: dict[FunctionNode, bool] = {}  # (an optimizer stepped, not only backward run)

    def markers(self, loop: Loop) -> tuple[bool, bool]:
        """(is a step loop, trains) from the loop's own body.  A loop whose body always ends it on the first
        pass (its last statement a ``break`` or ``return``: "take one batch"; or a ``try`` that does so once its
        work succeeds: a retry loop that halves the batch on out-of-memory) runs once, not per step."""
        if loop.body and ends_first_pass(loop.body[-1]):
            return False, False
        facts = loop_facts(loop)
        if facts.trains:
            if self._within_one_step(loop):
                return False, False  # ``for chunk in iter_batches(batch, n): chunk_loss.backward()``: one step's micro-batches
            return True, True
        if self._serves(loop):
            return False, False  # ``def predict(self, X):`` no code of the file calls: serving a trained model, not training it
        if self._within_one_step(loop):
            return False, False  # ``for x, y in minibatches: nll += ...`` then ``loss.backward()``: parts of one step
        step = isinstance(loop, (ast.For, ast.AsyncFor)) and is_loader_like(loop.iter, self.loader_vars) \
            and not self._built_as_list(loop)
        if not step and _around_training_loop(loop):
            return False, False  # an epoch loop: its own model calls (samples made each epoch) run once per epoch
        if not step and self._calls_model(facts) and self._enclosing_name(loop) not in _NOT_FOLLOWED:
            step = True
        callees = self._loop_callees(loop, facts)
        if not step:
            step = any(is_step_function(f) for f in callees)
        if not step and facts.fetches_batch:  # ``batch = next(self.data); self.run_step(batch)``
            step = any(self.trains_through_calls(f, 3) for f in callees)
        if not step and facts.slices_by_stride:  # ``for i in range(0, n, chunk): torch.mm(x[i:i+chunk], ...)``
            step = any(
                (self.ctx.call_qualname(n) or "").startswith("torch.") for n in own_nodes(loop.body) if isinstance(n, ast.Call)
            )
        return step, False

    def _loop_callees(self, loop: Loop, facts: LoopFacts) -> list[FunctionNode]:
        """Functions of this file a loop's own body calls: by plain name, and ``self.`` methods of its class."""
        found = [f for name in facts.called_names for f in self.functions.get(name, ()) if not self.ctx.is_method(f)]
        if facts.self_called:
            owner = self.ctx.enclosing_class(loop)
            found += [
                f for name in facts.self_called for f in self.functions.get(name, ())
                if owner is not None and self.ctx.parents.get(f) is owner
            ]
        return found

    def block_steps_through_calls(self, block: ast.If) -> bool:
        """Whether a guarded block steps an optimizer through the functions and ``self.`` methods of this file it
        calls (``if t % train_freq == 0: loss = self._update_network(batch)``): the guard is when the step runs."""
        callees = self._callees_in(own_nodes(block.body), self.ctx.enclosing_class(block))
        return any(self._through_calls(f, 3, _steps_anywhere, self._steps_through) for f in callees)

    def loop_steps_through_calls(self, loop: Loop) -> bool:
        """Whether a loop's body steps an optimizer through the functions and ``self.`` methods of this file it
        calls (``for batch in loader: train_step(model, batch)``); not a helper that runs ``backward()`` for the
        inputs' gradients only (an adversarial attack, a saliency map)."""
        return any(self._through_calls(f, 3, _steps_anywhere, self._steps_through) for f in self._loop_callees(loop, loop_facts(loop)))

    def trains_through_calls(self, func: FunctionNode, depth: int) -> bool:
        """Whether a function trains, itself or through the functions and ``self.`` methods of this
        file it calls (``run_step`` -> ``self.forward_backward`` -> ``loss.backward()``)."""
        return self._through_calls(func, depth, trains_anywhere, self._trains_through)

    def _through_calls(self, func: FunctionNode, depth: int, holds: Callable[[FunctionNode], bool],
                       known: dict[FunctionNode, bool]) -> bool:
        """Whether ``holds`` of a function, or of what it calls in this file, ``depth`` calls deep (``known``: the answers so far)."""
        found = known.get(func)
        if found is not None:
            return found
        known[func] = False  # (recursion guard)
        result = holds(func) or depth > 0 and any(
            self._through_calls(callee, depth - 1, holds, known) for callee in self._function_callees(func)
        )
        known[func] = result
        return result

    def is_single_step(self, func: FunctionNode) -> bool:
        """A function one call of which is one training step, with no step loop of its own nor in the
        functions and ``self.`` methods it calls (``trainer.train_step()``: ``self.update()`` steps the
        optimizer); not ``train_one_epoch``, nor ``train(epoch, loader)`` that runs ``self.run_epoch(...)``."""
        return not self._has_step_loop(func, 2, True) and self.trains_through_calls(func, 2)

    def _has_step_loop(self, func: FunctionNode, depth: int, own: bool) -> bool:
        """A loop in ``func`` that walks the data or (``own``: in ``func`` itself) trains, or one that walks
        the data in what it calls, ``depth`` calls deep (a loop that trains in a callee may be one step's
        micro-batches: ``for chunk in split(batch): accelerator.backward(loss)``)."""
        for node in ast.walk(func):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                if node.body and ends_first_pass(node.body[-1]):
                    continue  # runs once: a retry loop, "take one batch"
                facts = loop_facts(node)
                iterates_loader = isinstance(node, (ast.For, ast.AsyncFor)) and is_loader_like(node.iter, self.loader_vars)
                if (own and facts.trains or iterates_loader or facts.fetches_batch) and not self._within_one_step(node):
                    return True
        return depth > 0 and any(self._has_step_loop(callee, depth - 1, False)
                                 for callee in self._function_callees(func) if callee is not func)

    def _function_callees(self, func: FunctionNode) -> list[FunctionNode]:
        return self._callees_in(ast.walk(func), self.ctx.enclosing_class(func))

    def _callees_in(self, nodes: Iterable[ast.AST], owner: ast.ClassDef | None) -> list[FunctionNode]:
        """Functions of this file the calls among ``nodes`` reach: by plain name, and ``self.`` methods of ``owner``."""
        found: list[FunctionNode] = []
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name):
                found += [f for f in self.functions.get(node.func.id, ()) if not self.ctx.is_method(f)]
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                found += [f for f in self.functions.get(node.func.attr, ()) if owner is not None and self.ctx.parents.get(f) is owner]
        return found

    def _calls_model(self, facts: LoopFacts) -> bool:
        """A model call among the loop's own calls; ``validate_network(loader, model)`` or
        ``render_with_model(model, noise)`` is a function of this file or an imported one, not a
        module's forward (whether it does per-step work is :func:`.loop_kinds.is_step_function`'s question)."""
        return any(
            name is None or (name not in self.functions and name not in self.ctx.aliases)
            for name in facts.model_callees
        )

    def _within_one_step(self, loop: Loop) -> bool:
        """A loop over a parameter of a function that is one training step (its own body, after the loop,
        runs backward or steps the optimizer): ``def update(self, minibatches): for x, y in minibatches: ...``
        walks the parts of the step's data (domains, views), once per step, not one step per pass."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        function = self.ctx.enclosing_function(loop)
        if function is None:
            return False
        iterable = loop.iter
        while isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) \
                and iterable.func.id in ("enumerate", "zip", "reversed", "list") and iterable.args:
            iterable = iterable.args[0]
        params = parameter_names(function.args)
        if isinstance(iterable, ast.Call) and iterable.args and isinstance(iterable.args[0], ast.Name) \
                and iterable.args[0].id in params and not is_loader_like(iterable.args[0], self.loader_vars) \
                and last_name(iterable.func) not in RANGES:  # (counts, not the parts of a batch)
            # ``for chunk in iter_batches(batch, size): chunk_loss.backward()`` then ``optimizer.step()``: the
            # micro-batches of one step, when the function steps the optimizer once, after them
            return any(is_optimizer_step(n) for n in own_nodes(function.body)) and is_step_function(function)
        # (the parameter test first: it is cheap, and whether the function is one step walks all of it)
        return isinstance(iterable, ast.Name) and iterable.id in params and is_step_function(function)

    def _serves(self, loop: Loop) -> bool:
        """The loop is in a function named for inference (``predict``, ``inference``) that nothing else in
        the file calls (a library's prediction API; a ``--do_predict`` pass run from another file).  One
        the file calls (``evaluate()`` -> ``self.predict(x)`` every epoch) may run while training."""
        name = self._enclosing_name(loop)
        if name is None or not _INFERENCE_NAME.match(name):
            return False
        key = ("inference-callers", name)
        called = self.ctx.memo.get(key)
        if called is None:
            called = self.ctx.memo[key] = any(
                (isinstance(n.func, ast.Name) and n.func.id == name) or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
                for n in self.ctx.nodes_of(ast.Call) if isinstance(n, ast.Call)
            )
        return not called

    def _built_as_list(self, loop: ast.For | ast.AsyncFor) -> bool:
        """The loop walks a name that reads like a loader but that its function builds as a plain list of other
        things (``search_space_iterator = list(ParameterGrid(space))``, then ``sorted(...)`` of itself): a loop
        over settings or files, not batches.  A list made from a loader (``list(train_loader)``) still holds batches."""
        inner = unwrap_iterable(loop.iter)
        scope = self.ctx.enclosing_function(loop)
        if not isinstance(inner, ast.Name) or scope is None:
            return False
        listed = False
        for node in scope_entries(scope, "name-assignments", (), _name_assignment):  # (any order will do: the first
            # assignment that is not a list decides, and any decides the same)
            if not any(isinstance(t, ast.Name) and t.id == inner.id for t in node.targets):
                continue
            value = node.value
            if isinstance(value, (ast.List, ast.ListComp, ast.Tuple)):
                listed = True
                continue
            if not (isinstance(value, ast.Call) and value.args and last_name(value.func) in _LIST_BUILDERS):
                return False
            source = unwrap_iterable(value.args[0])
            if isinstance(source, ast.Name) and source.id == inner.id:
                continue  # re-sorted or wrapped in a progress bar: still what it was
            if last_name(value.func) in ("list", "sorted", "tuple") and not is_loader_like(source, self.loader_vars):
                listed = True
                continue
            return False
        return listed

    def _enclosing_name(self, node: ast.AST) -> str | None:
        func = self.ctx.enclosing_function(node)
        return func.name if func is not None else None


def _name_assignment(node: ast.AST) -> tuple[ast.Assign, ...]:
    """``node`` when it assigns to a plain name (``x = ...``, ``a = b = ...``): an entry of ``_built_as_list``'s walk."""
    return (node,) if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) for t in node.targets) else ()


def _around_training_loop(loop: Loop) -> bool:
    """Whether a loop nested in this one's body (not in a definition) trains: this one, which iterates no loader,
    runs once per many steps (an epoch loop), not once per micro-batch (``for chunk in x.split(2)`` in a loader loop)."""
    return any(node is not loop and isinstance(node, LOOP_NODES) and loop_facts(node).trains
               for node in scope_walk(loop, SCOPE_NODES))


def _steps_anywhere(func: FunctionNode) -> bool:
    """Whether an optimizer steps anywhere in the function."""
    return any(is_optimizer_step(node) for node in ast.walk(func))
