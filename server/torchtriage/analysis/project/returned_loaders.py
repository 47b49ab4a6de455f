"""Loaders built by a factory and iterated by the files that call it (``build_loader(config)``).

Training code often builds its DataLoaders in one file and iterates them in another::

    # data/build.py                         # main.py
    def build_loader(config):               train_loader, val_loader = build_loader(config)
        train = DataLoader(..., num_workers=   for epoch in range(epochs):
                   config.DATA.NUM_WORKERS)        train_one_epoch(model, train_loader)
        val = DataLoader(...)                      validate(model, val_loader)
        return train, val

A DataLoader call whose variable a function returns (alone, or at a position of a returned
tuple) is matched with each project call of that function whose result is unpacked into
names; a name that a step loop then iterates, inside a loop that does not also build it
again (once per epoch), makes a :class:`ReturnedLoader` for the factory's file: the loader
rules report the DataLoader there (TT304: workers restarted every epoch; TT303: batches
copied to the GPU in that step loop).  So does a name handed to a project class that keeps
it and reads it in a step loop of its own (:mod:`.kept_loaders`; taken with ``next()``, it is
not read every epoch: TT303 only).  Nothing is executed.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator

from ..hotloops.finder import HotLoops
from ..hotloops.step_markers import SCOPE_NODES
from ..project_view import ReturnedLoader
from .call_graph import CallGraph
from .kept_loaders import KeptRead, class_read, each_epoch, kept_read
from .modules import FunctionNode, ModuleTable, ProjectModule

Origin = tuple[ProjectModule, FunctionNode, str, "int | None"]  # the DataLoader's file and function, its variable, return position
Factory = dict[tuple[ProjectModule, FunctionNode], list[Origin]]
WRAPPERS = 3  # factories that return another factory's result (``return _build_loader(config)``), followed this deep


def returned_loaders(graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops]) -> dict[ProjectModule, tuple[ReturnedLoader, ...]]:
    """Per factory file: its returned loaders that a caller iterates in a step loop once per epoch."""
    factories = _factories(graph)
    if not factories:
        return {}
    found: dict[ProjectModule, list[ReturnedLoader]] = {}
    names = {func.name for _, func in factories}  # a cheap first cut before resolving a call
    for module in graph.table.by_path.values():
        if module.ctx is None or module.is_test:
            continue
        for assign in module.ctx.nodes_of(ast.Assign):
            assert isinstance(assign, ast.Assign)
            if not isinstance(assign.value, ast.Call) or len(assign.targets) != 1:
                continue
            func = assign.value.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) not in names:
                continue
            target = _resolve(graph, module, assign.value.func)
            if target is None or target not in factories:
                continue
            for origin, factory, variable, position in factories[target]:
                name = _unpacked(assign.targets[0], position) or _kept_on_self(assign.targets[0], position)
                read = _iterated(graph, hot_of, module, assign, name) if name else None
                if read is not None:
                    where, moves, every_epoch = read
                    found.setdefault(origin, []).append(
                        ReturnedLoader(variable, factory.name, f"{module.label}:{assign.lineno}", where, moves, every_epoch))
    return {module: tuple(reads) for module, reads in found.items()}


def imported_loader_classes(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names it imports that are project subclasses of torch's DataLoader
    (``from lib.utils import DataLoaderX``, where ``class DataLoaderX(DataLoader)``)."""
    from ..rules._loaders import DATALOADER_QUALNAMES

    return _imported_subclasses(table, lambda qualname: qualname in DATALOADER_QUALNAMES)


def imported_iterable_datasets(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names it imports that are project subclasses of torch's IterableDataset
    (``from lit_llama.packed_dataset import CombinedDataset``, where ``class CombinedDataset(IterableDataset)``)."""
    return _imported_subclasses(table, lambda qualname: qualname.endswith("IterableDataset"))


def _imported_subclasses(table: ModuleTable, base_matches: Callable[[str], bool]) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names it imports of project classes with a base whose qualified name ``base_matches``."""
    subclasses = {
        id(cls) for module in table.by_path.values() if module.ctx is not None
        for cls in module.classes.values()
        if any(base_matches(module.ctx.qualname(base) or "") for base in cls.bases)
    }
    if not subclasses:
        return {}
    out: dict[ProjectModule, frozenset[str]] = {}
    for module in table.by_path.values():
        names = set()
        for local, (_, attr) in module.imports.items():
            if attr is None:
                continue
            target = table.resolve_dotted(module, ast.Name(id=local, ctx=ast.Load()))  # through re-exports
            if isinstance(target, tuple) and id(target[1]) in subclasses:
                names.add(local)
        if names:
            out[module] = frozenset(names)
    return out


def _factories(graph: CallGraph) -> Factory:
    """Functions that return the variable a DataLoader call was assigned to, and those that return
    such a function's result as it is."""
    from ..rules._loaders import RETURNED, is_dataloader, loader_name

    out: Factory = {}
    for module in graph.table.by_path.values():
        ctx = module.ctx
        if ctx is None or module.is_test or "DataLoader" not in ctx.source:
            continue
        for call in ctx.nodes_of(ast.Call):
            if not is_dataloader(ctx, call):
                continue
            variable = loader_name(ctx, call)  # type: ignore[arg-type]
            func = ctx.enclosing_function(call)
            if func is None:
                continue
            if variable is None and isinstance(ctx.parents.get(call), ast.Return):  # ``return DataLoader(...)``
                out.setdefault((module, func), []).append((module, func, RETURNED, None))
                continue
            if variable is None:
                continue
            for position in _returned_at(func, variable):
                out.setdefault((module, func), []).append((module, func, variable, position))
    wrappers = _returned_calls(graph) if out else {}
    unpacking = _unpacking_wrappers(graph) if out else {}
    for _ in range(WRAPPERS if out else 0):
        added = False
        for (module, func), calls in wrappers.items():
            for value in calls:
                inner = _resolve(graph, module, value.func)
                if inner is None or inner not in out or inner == (module, func):
                    continue
                added |= _add_origins(out, (module, func), out[inner])
        for (module, func), assigns in unpacking.items():
            for assign in assigns:
                inner = _resolve(graph, module, assign.value.func)  # type: ignore[attr-defined]
                if inner is None or inner not in out or inner == (module, func):
                    continue
                handed_on = [(origin, factory, variable, position) for origin, factory, variable, inner_position in out[inner]
                             for name in [_unpacked(assign.targets[0], inner_position)] if name
                             for position in _returned_at(func, name)]
                added |= _add_origins(out, (module, func), handed_on)
        if not added:
            break
    return out


def _add_origins(out: Factory, wrapper: tuple[ProjectModule, FunctionNode], origins: list[Origin]) -> bool:
    """Note that ``wrapper`` returns these loaders too; whether any was new."""
    known = out.setdefault(wrapper, [])
    new = [origin for origin in origins if origin not in known]
    known.extend(new)
    return bool(new)


def _unpacking_wrappers(graph: CallGraph) -> dict[tuple[ProjectModule, FunctionNode], list[ast.Assign]]:
    """Per function of the project: the calls whose results it names and returns as its own
    (``data_set, data_loader = data_provider(args, flag)`` ... ``return data_set, data_loader``)."""
    returning = _returned_names(graph)
    out: dict[tuple[ProjectModule, FunctionNode], list[ast.Assign]] = {}
    for module in dict.fromkeys(module for module, _ in returning):  # each file's assignments index, not a walk per function
        assert module.ctx is not None
        for node in module.ctx.nodes_of(ast.Assign):
            if isinstance(node.value, ast.Call) and len(node.targets) == 1:  # type: ignore[attr-defined]
                key = (module, module.ctx.enclosing_function(node))
                if key in returning:
                    out.setdefault(key, []).append(node)  # type: ignore[arg-type]
    return out


def _returned_names(graph: CallGraph) -> dict[tuple[ProjectModule, FunctionNode], None]:
    """The project's functions that return a name or a tuple of names."""
    return {key: None for key, _ in _returns(graph, lambda value: isinstance(value, ast.Name) or (
        isinstance(value, ast.Tuple) and any(isinstance(e, ast.Name) for e in value.elts)))}


def _resolve(graph: CallGraph, module: ProjectModule, func: ast.expr) -> tuple[ProjectModule, FunctionNode] | None:
    """The project function a call names: by import or module path, or ``self.method`` of the caller's class."""
    found = graph.table.resolve_function(module, func)
    if found is not None or not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return found
    assert module.ctx is not None
    cls = module.ctx.enclosing_class(func)
    for node in cls.body if cls is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.attr:
            return module, node
    return None


def _returned_calls(graph: CallGraph) -> dict[tuple[ProjectModule, FunctionNode], list[ast.Call]]:
    """Per function of the project: the calls it returns as they are (``return _build_loader(config)``)."""
    out: dict[tuple[ProjectModule, FunctionNode], list[ast.Call]] = {}
    for key, value in _returns(graph, lambda value: isinstance(value, ast.Call)):
        out.setdefault(key, []).append(value)  # type: ignore[arg-type]
    return out


def _returns(graph: CallGraph, wanted: Callable[[ast.expr], bool]) -> Iterator[tuple[tuple[ProjectModule, FunctionNode], ast.expr]]:
    """((file, function), value) of each ``return value`` in the project's functions that ``wanted``
    accepts, from each file's index of ``return`` statements (no walk of every body)."""
    for module in graph.table.by_path.values():
        ctx = module.ctx
        if ctx is None or module.is_test:
            continue
        for ret in ctx.nodes_of(ast.Return):
            value = getattr(ret, "value", None)
            func = ctx.enclosing_function(ret) if value is not None and wanted(value) else None
            if func is not None:
                yield (module, func), value


def _returned_at(func: FunctionNode, variable: str) -> Iterator[int | None]:
    """Where ``func`` returns ``variable``: None alone, else its index in a returned tuple."""
    stack: list[ast.AST] = [n for n in func.body if not isinstance(n, SCOPE_NODES)]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Name) and value.id == variable:
                yield None
            elif isinstance(value, ast.Tuple):
                for index, element in enumerate(value.elts):
                    if isinstance(element, ast.Name) and element.id == variable:
                        yield index
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, SCOPE_NODES))


def _unpacked(target: ast.expr, position: int | None) -> str | None:
    """The caller's name for the returned loader."""
    if position is None:
        return target.id if isinstance(target, ast.Name) else None
    if isinstance(target, (ast.Tuple, ast.List)) and position < len(target.elts) and not any(
            isinstance(e, ast.Starred) for e in target.elts):
        element = target.elts[position]
        return element.id if isinstance(element, ast.Name) else None
    return None


def _kept_on_self(target: ast.expr, position: int | None) -> str | None:
    """``self.train_loader = SentenceRELoader(...)``: the attribute the caller keeps the returned loader in, spelled
    ``self.<attr>`` (only its own class's step loops read it)."""
    if position is None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return f"self.{target.attr}"
    return None


def _iterated(graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops], module: ProjectModule,
              built: ast.Assign, name: str) -> tuple[str, bool, bool] | None:
    """(the step loop, whether it copies batches to a device, whether it iterates the loader every epoch) when
    ``name``, unpacked from the factory at ``built``, is iterated by a step loop once per pass of an outer loop
    that does not rebuild it, or handed to a project class that reads it in a step loop (:mod:`.kept_loaders`;
    an every-epoch read is preferred).  ``self.<attr>`` (kept on the object): read by its own class's loops."""
    from ..rules._loaders import moves_data_to_device
    from .links import iterated_name

    assert module.ctx is not None
    scope = module.ctx.enclosing_function(built) or module.ctx.tree
    fetched: KeptRead | None = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            passed = [i for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name]
            keywords = [k.arg for k in node.keywords if k.arg and isinstance(k.value, ast.Name) and k.value.id == name]
            if not (passed or keywords):
                continue
            kept = kept_read(graph, hot_of, module, node, passed, keywords)
            if kept is not None and kept.every_epoch:
                return kept.where, kept.moves_to_device, True
            fetched = fetched or kept
            if not each_epoch(module, node, built):
                continue
            target = graph.table.resolve_function(module, node.func) or _local_function(module, node)
            if target is None:
                continue
            owner, func = target
            params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
            wanted = {params[i]: params[i] for i in passed if i < len(params)} | {k: k for k in keywords}  # type: ignore[misc]
            hot = hot_of(owner)
            for region in hot.step_loops:
                loop = region.node
                if owner.ctx is not None and owner.ctx.enclosing_function(loop) is func and isinstance(loop, (ast.For, ast.AsyncFor)) \
                        and iterated_name(loop.iter, wanted) is not None:
                    return f"{owner.label}:{loop.lineno}", moves_data_to_device(owner.ctx, [region], hot), True
    hot = hot_of(module)
    home = module.ctx.enclosing_class(built) if name.startswith("self.") else None
    if home is not None:  # kept on the object: its own class's step loops read it
        kept = class_read(module, home, frozenset({name[len("self."):]}), hot)
        if kept is not None and (kept.every_epoch or fetched is None):
            return kept.where, kept.moves_to_device, kept.every_epoch
    for region in hot.step_loops if home is None else ():
        loop = region.node
        if isinstance(loop, (ast.For, ast.AsyncFor)) and iterated_name(loop.iter, {name: name}) is not None \
                and each_epoch(module, loop, built):
            return f"{module.label}:{loop.lineno}", moves_data_to_device(module.ctx, [region], hot), True
    return (fetched.where, fetched.moves_to_device, False) if fetched is not None else None


def _local_function(module: ProjectModule, call: ast.Call) -> tuple[ProjectModule, FunctionNode] | None:
    """A function of the caller's own file called by name (``train_one_epoch(...)`` defined in ``main.py``)."""
    assert module.ctx is not None
    if isinstance(call.func, ast.Name):
        functions = [f for f in module.ctx.functions.get(call.func.id, ()) if not module.ctx.is_method(f)]
        if functions:
            return module, functions[0]
    return None
