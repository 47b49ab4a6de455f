"""Functions a project runs once, outside every loop: the evaluation after training.

A training script ends with a final evaluation::

    def main():
        for epoch in range(args.epochs):
            train(...)
        test_loss, test_acc = evaluate_standard(test_loader, model)

``evaluate_standard`` loops over the test loader with the model in eval mode, one pass
in the whole run.  Its per-batch reads are no cost of a training step, though its loop
looks like the per-epoch validation that is one.  A function is *run once* when the
project calls it, every call is outside any loop or comprehension of the calling
function, and each calling function is run once too, or the call is module-level
code.  A function that is never called (a framework's hook), or whose name is also
passed around uncalled (``callbacks=[evaluate]``), is not: it may run any number of
times.  Calls are matched by name (``evaluate(...)``, ``self.evaluate(...)``,
``utils.evaluate(...)``), so any loop calling a function of the same name anywhere in
the project keeps every function of that name per step.  Nothing is executed.

A project where no file trains (an evaluation or inference repository) has none: its
loops are judged as before.  The hot-loop finder then leaves out a run-once function's loops that put the model in
evaluation (``model.eval()`` before them, or grad off around them) and are not nested
in another of its loops (:func:`..hotloops.finder.find_hot_loops`, ``run_once``).
"""

from __future__ import annotations

import ast

from ..hotloops.run_once import evaluation_function
from ..hotloops.step_markers import LOOP_NODES
from .modules import ModuleTable, ProjectModule
from .roles import trains

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_MAX_CALLER_DEPTH = 6  # callers of callers followed before a function counts as run any number of times

_Site = tuple[bool, "str | None"]  # (inside a loop or comprehension of its function, that function's name; None: module level)


def run_once_functions(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file, the names of its functions the project runs once and whose loops evaluate (see the module doc);
    files with none left out."""
    live = [m for m in table.by_path.values() if m.ctx is not None and not m.is_test]
    defined = {m: _candidates(m) for m in live}
    wanted = set().union(*defined.values()) if defined else set()
    if not wanted or not any(trains(m) for m in live):
        return {}  # (a project that does not train, an evaluation or inference repository: its loops are judged as before)
    sites = _CallSites(live)
    memo: dict[str, bool] = {}

    def once(name: str, depth: int) -> bool:
        if name in memo:
            return memo[name]
        memo[name] = False  # a cycle (recursion, mutual calls) is not once
        found = sites.of(name)
        if depth > _MAX_CALLER_DEPTH or not found:
            return False
        memo[name] = all(not in_loop and (caller is None or once(caller, depth + 1)) for in_loop, caller in found)
        return memo[name]

    result = {m: {n for n in names if once(n, 0)} for m, names in defined.items() if names}
    handed = _named_uncalled(live, set().union(*result.values()) if result else set())  # (checked last: it reads every name)
    return {m: frozenset(names - handed) for m, names in result.items() if names - handed}


def _candidates(module: ProjectModule) -> set[str]:
    """Names of the file's functions holding an evaluation loop (:func:`..hotloops.run_once.evaluation_function`)."""
    ctx = module.ctx
    assert ctx is not None
    if ".eval()" not in ctx.source and "no_grad" not in ctx.source and "inference_mode" not in ctx.source:
        return set()  # (a cheap first cut: neither marker can be there)
    names: set[str] = set()
    for loop in ctx.nodes_of(LOOP_NODES):
        func = evaluation_function(ctx, loop)  # type: ignore[arg-type]
        if func is not None:
            names.add(func.name)
    return names


class _CallSites:
    """Where the project calls each name: one pass over every file's calls, bucketed by the name called."""

    def __init__(self, live: list[ProjectModule]) -> None:
        self._calls: dict[str, list[tuple[ProjectModule, ast.Call]]] = {}
        for module in live:
            for call in module.ctx.nodes_of(ast.Call):  # type: ignore[union-attr]
                func = call.func  # type: ignore[attr-defined]
                name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
                if name is not None:
                    self._calls.setdefault(name, []).append((module, call))  # type: ignore[arg-type]

    def of(self, name: str) -> list[_Site]:
        """Every call of ``name`` in the project (``f(...)``, ``obj.f(...)``), with where it is."""
        return [_site(module, call) for module, call in self._calls.get(name, ())]


def _site(module: ProjectModule, call: ast.Call) -> _Site:
    """Where a call is: inside a loop or comprehension of its function, and that function's name."""
    ctx = module.ctx
    assert ctx is not None
    in_loop = False
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, _SCOPES):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return in_loop, ancestor.name
            return True, None  # a lambda or a class body: when it runs is unknown, so not once
        if isinstance(ancestor, LOOP_NODES + _COMPREHENSIONS):
            in_loop = True
    return in_loop, None


def _named_uncalled(live: list[ProjectModule], wanted: set[str]) -> set[str]:
    """Of ``wanted``, the names read somewhere other than as the function of a call (``callbacks=[evaluate]``,
    ``hook = self.test``, ``map(evaluate, ...)``): such a function may run any number of times."""
    found: set[str] = set()
    if not wanted:
        return found
    for module in live:
        ctx = module.ctx
        assert ctx is not None
        if not any(name in ctx.source for name in wanted):
            continue
        for node in ctx.nodes_of((ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr  # type: ignore[attr-defined]
            if name not in wanted or name in found or not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                continue
            parent = ctx.parents.get(node)
            if not (isinstance(parent, ast.Call) and parent.func is node):
                found.add(name)
    return found
