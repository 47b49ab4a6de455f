"""The project model: several files analysed as one program, purely statically.

Real training code is not one file: the step loop lives in ``train.py`` or
``engine.py`` while the work it calls every step (a loss module's ``forward``,
a matcher, box utilities, a metrics helper) lives elsewhere, and the device is
decided by the entry script.  A :class:`Project` parses every file once, resolves
the project's own imports (:mod:`.project_modules`), follows per-step calls across
files (:mod:`.call_graph`) until nothing new is reached, then works out what the
others tell each file (:mod:`.links`): CUDA reach, loaders iterated elsewhere, knob
defaults.  Solving reads each file's first, syntax-only context; the context the
rules get is built afterwards, once, with all of that in it.

A body reached that way is per-step in its own file (see
:class:`.hotloops.HotEntry`) and its findings name the call path.  Nothing is
imported or executed.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterable

from ...config import Settings
from ...findings import Finding
from .call_graph import CallGraph
from ..context import ModuleContext
from ..defaults import Default, unique
from ..engine import analyze_context, enabled_rules, has_file_noqa
from ..hotloops.finder import HotEntry, HotLoops, find_hot_loops
from ..incremental.reparse import ParsedModule, parse_module
from .batch_movers import Handoff, batch_movers
from .precision import precision_choosers
from .forward_reached import forward_reached_names
from .links import (
    cuda_by_calls, cuda_reach, link_loaders, loaders_on_cuda, loops_training_elsewhere, step_data_params, syncing_imports, training_links,
)
from .returned_loaders import imported_iterable_datasets, imported_loader_classes, returned_loaders
from .roles import AUXILIARY, auxiliary_modules, imported_modules
from .run_once import run_once_functions
from .modules import FunctionNode, ModuleTable, ProjectModule, module_name
from ..project_view import ProjectView, view_of
from ..hotloops.loop_kinds import loop_facts
from ..hotloops.step_loops import StepLoopJudge
from ..hotloops.step_markers import LOOP_NODES
from ..syntax import bound_name

__all__ = ["Project", "ProjectModule", "module_name"]

_MAX_ROUNDS = 10_000  # hot-entry additions per project: a guard, never reached on real code
_STEP_LOOP_ROUNDS = 3  # rounds of loops found to train through another file (each may reach more)


class Project:
    """A set of files analysed together: cross-file hot entries and CUDA reach, then the rules."""

    def __init__(
        self,
        files: Iterable[tuple[str, str, str]],
        settings: Settings | None = None,
        relative_labels: bool = False,
        parse_cache: dict[str, tuple[str, ParsedModule | Finding]] | None = None,
    ) -> None:
        """``files``: (display path, path relative to the project root, source text) per Python file.

        Call paths name files by display path, or by relative path with ``relative_labels``.
        ``parse_cache`` (display path -> (text, parse)) lets a long-lived caller (the language
        server's index) re-parse only the files whose text changed; it is updated in place."""
        self.settings = settings or Settings()
        self.table = ModuleTable()
        for display, relative, source in files:
            cached = parse_cache.get(display) if parse_cache is not None else None
            if cached is not None and cached[0] == source:
                parsed = cached[1]
            else:
                parsed = parse_module(source, display)
                if parse_cache is not None:
                    parse_cache[display] = (source, parsed)
            label = relative if relative_labels else display
            ctx = None
            if not isinstance(parsed, Finding):
                ctx = ModuleContext(
                    source=source, tree=parsed.tree, path=display, settings=self.settings, parsed=parsed, path_label=label
                )
            module = ProjectModule(display, module_name(relative), relative.endswith("__init__.py"), ctx, parsed)
            module.label = label
            self.table.add(module)
        for module in self.table.by_path.values():
            self.table.index(module)
        self.graph = CallGraph(self.table)
        # Per file: the attribute defaults of the whole project and the constants it imports.
        self._defaults: dict[ProjectModule, tuple[dict[str, list[Default]], dict[str, Default]]] = {}
        self._share_defaults()
        self._entries: dict[ProjectModule, dict[FunctionNode, HotEntry]] = {}
        self._last_hot: dict[ProjectModule, tuple[tuple[HotEntry, ...], HotLoops]] = {}
        self._solved_hot: dict[ProjectModule, HotLoops] = {}  # computed with the final entries
        self._auxiliary: dict[ProjectModule, str] = {}  # scripts beside the training code (:mod:`.roles`)
        self._train_elsewhere: frozenset[ProjectModule] = frozenset()  # files that train through another's step
        self._imported: set[ProjectModule] = set()  # files other project files import (:mod:`.roles`)
        self._run_once: dict[ProjectModule, frozenset[str]] = {}  # functions the project runs once (:mod:`.run_once`)
        self._solved = False
        self._step_loops: dict[ProjectModule, frozenset[int]] = {}  # loops that train through another file (see solve)
        self._handoffs: dict[ProjectModule, set[Handoff]] = {}  # per-step calls handing step data to another file

    @property
    def modules(self) -> dict[str, ProjectModule]:
        """Files by dotted module name."""
        return self.table.modules

    @property
    def by_path(self) -> dict[str, ProjectModule]:
        """Files by display path."""
        return self.table.by_path

    def find_module(self, name: str, near: ProjectModule | None = None) -> ProjectModule | None:
        return self.table.find_module(name, near)

    def _share_defaults(self) -> None:
        """Every file sees the argparse/config-class defaults of the whole project, and the
        constants it imports from project files (see :mod:`.defaults`)."""
        merged: dict[str, list[Default]] = {}
        for module in self.by_path.values():
            if module.ctx is not None and not module.is_test:
                for key, found in module.ctx.own_defaults[0].items():
                    merged.setdefault(key, []).extend(found)
        for module in self.by_path.values():
            if module.ctx is None:
                continue
            constants: dict[str, Default] = {}
            for local, (source, attr) in module.imports.items():
                owner = self.find_module(source, module) if attr is not None else None
                if owner is not None and owner is not module and owner.ctx is not None:
                    constant = unique(owner.ctx.own_defaults[1].get(attr))  # type: ignore[arg-type]
                    if constant is not None:
                        constants[local] = constant
            self._defaults[module] = (merged, constants)
            # The first, syntax-only context sees them too: a guard ``if it % args.print_every == 0:`` with
            # ``--print_every`` defaulting to 1 in another file holds every step while the hot loops are solved.
            module.ctx.project_defaults, module.ctx.imported_constants = merged, constants

    # --- solving -------------------------------------------------------------------------

    def _hot(self, module: ProjectModule) -> HotLoops:
        """The module's hot loops with its current entries (kept for the rules when final)."""
        assert module.ctx is not None
        entries = tuple(self._entries.get(module, {}).values())
        hot = find_hot_loops(module.ctx, entries, own_loops=module not in self._auxiliary, main_block=module not in self._imported,
                             step_loops=self._step_loops.get(module, frozenset()), run_once=self._run_once.get(module, frozenset()))
        self._last_hot[module] = (entries, hot)
        return hot

    def _solved_hot_of(self, module: ProjectModule) -> HotLoops:
        """The module's hot loops with its final entries (found on first use)."""
        hot = self._solved_hot.get(module)
        if hot is None:
            assert module.ctx is not None
            hot = self._solved_hot[module] = find_hot_loops(module.ctx, tuple(self._entries.get(module, {}).values()),
                                                            own_loops=module not in self._auxiliary,
                                                            main_block=module not in self._imported,
                                                            step_loops=self._step_loops.get(module, frozenset()),
                                                            run_once=self._run_once.get(module, frozenset()))
        return hot

    def _seed_single_steps(self) -> None:
        """A function of another file that is one training step (``trainer.train_step()``), called
        in any loop of a file, runs once per step: the caller's loop is the step loop though
        nothing in its own file says so."""
        live = [m for m in self.by_path.values() if m.ctx is not None and not m.is_test]
        in_loops: dict[ProjectModule, list[ast.Call]] = {
            m: [call for loop in m.ctx.nodes_of(LOOP_NODES) for call in loop_facts(loop).calls]  # type: ignore[union-attr, arg-type]
            for m in live
        }
        called = {bound_name(call.func) for calls in in_loops.values() for call in calls}
        judges: dict[ProjectModule, StepLoopJudge] = {}
        candidates: set[str] = set()  # names of single-step functions called in some loop: a cheap first cut
        for module in live:
            assert module.ctx is not None
            if "backward" not in module.ctx.source and ".step(" not in module.ctx.source:
                continue  # nothing here trains
            judge = judges[module] = StepLoopJudge(module.ctx, set())
            for name, functions in module.ctx.functions.items():
                if name in called and not name.startswith("__") and any(judge.is_single_step(f) for f in functions):
                    candidates.add(name)
        for module, calls in in_loops.items() if candidates else ():
            for call in calls:
                if bound_name(call.func) not in candidates:
                    continue
                for owner, func in self.graph.callees(module, call):
                    judge = judges.get(owner) or judges.setdefault(owner, StepLoopJudge(owner.ctx, set()))  # type: ignore[arg-type]
                    if func not in self._entries.get(owner, {}) and judge.is_single_step(func):
                        self._entries.setdefault(owner, {})[func] = HotEntry(func, frozenset(), (f"{module.label}:{call.lineno}",))

    def _propagate(self, pending: list[ProjectModule]) -> None:
        """Follow per-step calls across files from the modules in ``pending`` until nothing new is reached."""
        rounds = 0
        while pending and rounds < _MAX_ROUNDS:
            module = pending.pop(0)
            hot = self._hot(module)
            for call, region in hot.nodes(ast.Call):
                targets = self.graph.callees(module, call)
                if not targets:
                    continue
                chain = region.hot_path + (f"{module.label}:{call.lineno}",)
                for target_module, func in targets:
                    known = self._entries.setdefault(target_module, {})
                    batch = step_data_params(self.graph, module, call, region, func)
                    if batch:
                        self._handoffs.setdefault(module, set()).add((call, target_module, func))
                    entry = known.get(func)
                    if entry is not None and batch <= entry.batch:
                        continue
                    rounds += 1
                    if entry is None:
                        known[func] = HotEntry(func, frozenset(batch), chain)
                    else:  # another per-step call site hands it step data too: merge
                        known[func] = HotEntry(func, entry.batch | batch, entry.hot_path)
                    if target_module not in pending:
                        pending.append(target_module)

    def _drivers_found(self, training: list[ProjectModule]) -> list[ProjectModule]:
        """Files that train through another file's step (``training``) and were taken for scripts beside the
        training code (no import reaches a file that trains: the model is built by a registry): the roles
        again, with them as training files; what is no longer auxiliary, to propagate from."""
        late = [m for m in training if self._auxiliary.get(m) == AUXILIARY]
        if not late:
            return []
        self._train_elsewhere |= frozenset(late)
        before = self._auxiliary
        self._auxiliary = auxiliary_modules(self.table, self._train_elsewhere)
        return [m for m in before if m not in self._auxiliary and m not in training]

    def _current_hot(self, module: ProjectModule) -> HotLoops:
        """The module's hot loops as the propagation last computed them."""
        last = self._last_hot.get(module)
        return last[1] if last is not None else self._hot(module)

    def solve(self) -> None:
        """Propagate per-step calls across files until nothing new is reached, then CUDA reach."""
        if self._solved:
            return
        self._solved = True
        self._auxiliary = auxiliary_modules(self.table)
        self._imported = imported_modules(self.table)
        self._run_once = run_once_functions(self.table)
        self._seed_single_steps()
        self._propagate([m for m in self.by_path.values() if m.ctx is not None])
        for _ in range(_STEP_LOOP_ROUNDS):  # loops found to train through another file become step loops: propagate from them
            found = loops_training_elsewhere(self.graph, self._current_hot)
            new = [m for m, lines in found.items() if not lines <= self._step_loops.get(m, frozenset())]
            if not new:
                break
            for module in new:
                self._step_loops[module] = self._step_loops.get(module, frozenset()) | found[module]
            self._propagate(new + self._drivers_found(new))
        for module, (entries_used, hot) in self._last_hot.items():
            if entries_used == tuple(self._entries.get(module, {}).values()):  # computed with the final entries: reuse
                self._solved_hot[module] = hot
        self._last_hot.clear()
        device_calls: dict[ProjectModule, str] = {}
        cuda_from: dict[ProjectModule, str] = {}
        cuda_callers: dict[ProjectModule, str] = {}
        if self.settings.device not in ("cuda", "cpu"):
            device_calls, cuda_from = cuda_reach(self.table)
            cuda_callers = cuda_by_calls(self.table, self._entries, device_calls, cuda_from)
        loaders = link_loaders(self.graph, self._solved_hot_of)
        movers = batch_movers(self._handoffs, self._solved_hot_of)
        precision = precision_choosers(self.table)
        training = training_links(self.graph, self._solved_hot_of, {m: via for m, (_, via) in loaders.items()}, self._step_loops)
        syncing = syncing_imports(self.table)
        reached = forward_reached_names(self.table)
        returned = returned_loaders(self.graph, self._solved_hot_of)
        loaders_cuda = loaders_on_cuda(self.table, loaders, returned, device_calls, cuda_from, cuda_callers) \
            if self.settings.device not in ("cuda", "cpu") else {}
        loader_classes = imported_loader_classes(self.table)
        iterable_datasets = imported_iterable_datasets(self.table)
        for module in self.by_path.values():
            if module.ctx is None:
                continue
            first = module.ctx
            project_defaults, imported_constants = self._defaults[module]
            loader_reads, trains_via = loaders[module]
            module.ctx = ModuleContext(  # the context the rules get: built once, with all the project tells it
                source=first.source,
                tree=first.tree,
                path=first.path,
                settings=first.settings,
                parsed=first.parsed,
                hot_entries=tuple(self._entries.get(module, {}).values()),
                cuda_from=cuda_from.get(module),
                path_label=first.path_label,
                loader_reads=loader_reads,
                trains_via=trains_via,
                project_defaults=project_defaults,
                imported_constants=imported_constants,
                device_call=device_calls.get(module),
                hot_loops=self._solved_hot.get(module),
                auxiliary=self._auxiliary.get(module),
                imported=module in self._imported,
                returned_loaders=returned.get(module, ()),
                loader_classes=loader_classes.get(module, frozenset()),
                training_loops=training[module][0],
                trainer_calls=training[module][1],
                steps_on_cuda_in=training[module][2],
                syncing_imports=syncing.get(module, frozenset()),
                step_loops=self._step_loops.get(module, frozenset()),
                cuda_caller=cuda_callers.get(module),
                forward_reached=reached.get(module, frozenset()),
                iterable_datasets=iterable_datasets.get(module, frozenset()),
                batch_movers=movers.get(module, frozenset()),
                precision_from=precision.get(module),
                run_once=self._run_once.get(module, frozenset()),
                loaders_on_cuda_in=loaders_cuda.get(module),
            )
        self._solved_hot.clear()

    # --- results ----------------------------------------------------------------------------

    def context(self, path: str) -> ModuleContext | None:
        """The solved context of one file (its cross-file hot entries and CUDA reach set)."""
        self.solve()
        module = self.by_path.get(path)
        return module.ctx if module is not None else None

    def view(self, path: str) -> ProjectView | None:
        """The facts the rest of the project contributes to one file, by name (see :mod:`.project_view`)."""
        ctx = self.context(path)
        if ctx is None:
            return None
        view = view_of(ctx)
        own = {k: v for k, v in ctx.own_defaults[0].items()}
        if ctx.project_defaults is not None and ctx.project_defaults == own:
            view = replace(view, defaults=None)  # nothing from other files: as if alone
        if not (view.entries or view.cuda_from or view.imported_constants or view.defaults is not None or view.loader_reads
                or view.trains_via or view.device_call or view.auxiliary or view.imported or view.returned_loaders
                or view.loader_classes or view.training_loops or view.trainer_calls or view.steps_on_cuda_in
                or view.syncing_imports or view.step_loops or view.cuda_caller or view.forward_reached
                or view.iterable_datasets or view.batch_movers or view.precision_from or view.run_once
                or view.loaders_on_cuda_in):
            return None  # the file analysed alone gives the same findings
        return view

    def analyze(self, path: str, rules=None, fixes: bool = True) -> list[Finding]:  # type: ignore[no-untyped-def]
        """All findings for one file of the project, as :func:`.engine.analyze_parsed` gives them
        (``fixes=False``: without building their fixes, for hosts that only show them)."""
        module = self.by_path[path]
        if module.ctx is None:
            return [module.parsed] if isinstance(module.parsed, Finding) else []
        if has_file_noqa(module.ctx.source):
            return []
        ctx = self.context(path)
        assert ctx is not None
        selected = list(rules) if rules is not None else enabled_rules(self.settings, path)
        findings = analyze_context(ctx, selected, None if fixes else {})
        kept = {(f.code, f.span): f for f in findings}
        return sorted(kept.values(), key=Finding.sort_key)
