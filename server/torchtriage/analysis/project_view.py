"""What the rest of the project tells one file, in a form that survives re-parsing.

The project model (:mod:`.project`) computes, per file, which of its functions other
files call once per step (and through which call sites), where its CUDA device comes
from, and the knob defaults it can see.  A :class:`ProjectView` holds those facts by
*name* (``"SetCriterion.forward"``), not by syntax node, so the language server can
keep it between edits and hand it to the file's incremental analyzer: the context of a
freshly parsed module built from a view (:meth:`.context.ModuleContext.from_view`,
through :func:`context_facts`) gives exactly what a fresh project analysis gives.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .defaults import Default
from .hotloops.finder import HotEntry

if TYPE_CHECKING:
    from .module_index import ModuleIndex

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class LoaderRead:
    """A loader passed (``train_one_epoch(model, train_loader, ...)``, at ``line``/``col``) to a
    function of another project file whose step loop iterates it, or to the constructor of a class of
    another file whose methods read it in a step loop (``Solver(train_loader)``, :mod:`.project.kept_loaders`)."""

    name: str  # the name passed
    line: int
    col: int
    moves_to_device: bool  # that step loop copies its batches to a device
    where: str  # "engine.py:28", the step loop
    every_epoch: bool = False  # a class it is handed to (``Solver(loader)``) iterates it inside an epoch loop of its own


@dataclass(frozen=True)
class ReturnedLoader:
    """A loader this file's function builds and returns (``build_loader``), which a caller unpacks
    (at ``via``) and iterates in the step loop at ``where`` once per epoch, or hands to a class that reads
    it there (:mod:`.project.returned_loaders`)."""

    name: str  # the loader's variable in the factory
    factory: str  # the function returning it
    via: str  # "main.py:88", the call that unpacks it
    where: str  # "main.py:140", the step loop
    moves_to_device: bool  # that step loop copies its batches to a device
    every_epoch: bool = True  # iterated every epoch; False: a class that keeps it takes its batches with ``next()``


@dataclass(frozen=True)
class EntryByName:
    qualname: str  # "func", "Class.method", "outer.inner"
    batch: frozenset[str]
    hot_path: tuple[str, ...]


@dataclass(frozen=True)
class ProjectView:
    entries: tuple[EntryByName, ...] = ()
    cuda_from: str | None = None
    defaults: tuple[tuple[str, tuple[Default, ...]], ...] | None = None  # sorted by name
    imported_constants: tuple[tuple[str, Default], ...] = ()
    label: str | None = None  # how call paths name this file
    loader_reads: tuple[LoaderRead, ...] = ()
    trains_via: str | None = None
    # "dist_util.py:45": a project device function (``dev()``, returning a CUDA device) this file
    # calls, so it uses CUDA itself though its text never says "cuda".
    device_call: str | None = None
    # Why the file's own loops are not step loops (a script beside the training code), else None.
    auxiliary: str | None = None
    imported: bool = False  # other project files import it: its ``__main__`` block is a self-test or demo
    returned_loaders: tuple[ReturnedLoader, ...] = ()  # loaders it returns that callers iterate every epoch
    loader_classes: frozenset[str] = frozenset()  # imported names that are project DataLoader subclasses
    training_loops: frozenset[int] = frozenset()  # lines of step loops that train through another file's function
    trainer_calls: frozenset[str] = frozenset()  # names of its functions a training file calls
    steps_on_cuda_in: str | None = None  # a CUDA file whose training step one of its loops runs
    syncing_imports: frozenset[str] = frozenset()  # imported project functions whose own body waits for the device
    step_loops: frozenset[int] = frozenset()  # lines of loops that run a training step through another file's function
    cuda_caller: str | None = None  # a CUDA file whose step loop calls this file every step without importing it
    iterable_datasets: frozenset[str] = frozenset()  # imported names that are project IterableDataset subclasses
    forward_reached: frozenset[str] = frozenset()  # its classes / functions another file's forward code builds / calls
    batch_movers: frozenset[str] = frozenset()  # called names of project functions that copy the step data handed to them to a device
    precision_from: str | None = None  # a project file that imports this one and chooses the precision (FSDP MixedPrecision, AMP)
    run_once: frozenset[str] = frozenset()  # names of its functions the project runs once, outside every loop (the final test)
    loaders_on_cuda_in: str | None = None  # a CUDA file whose step loop copies the batches of this file's loaders to the device


def qualname_of(func: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    parts = [getattr(func, "name", "?")]
    parent = parents.get(func)
    while parent is not None and not isinstance(parent, ast.Module):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            parts.append(parent.name)
        parent = parents.get(parent)
    return ".".join(reversed(parts))


def view_of(ctx) -> ProjectView:  # type: ignore[no-untyped-def]
    """The project facts of a solved :class:`.context.ModuleContext`, by name."""
    entries = tuple(
        sorted(
            (EntryByName(qualname_of(e.func, ctx.parents), e.batch, e.hot_path) for e in ctx.hot_entries),
            key=lambda e: e.qualname,
        )
    )
    defaults = None
    if ctx.project_defaults is not None:
        defaults = tuple(sorted((k, tuple(v)) for k, v in ctx.project_defaults.items()))
    return ProjectView(
        entries, ctx.cuda_from, defaults, tuple(sorted(ctx.imported_constants.items())), ctx.path_label,
        tuple(ctx.loader_reads), ctx.trains_via, ctx.device_call, ctx.auxiliary, ctx.imported, tuple(ctx.returned_loaders),
        frozenset(ctx.loader_classes), frozenset(ctx.training_loops), frozenset(ctx.trainer_calls),
        ctx.steps_on_cuda_in, frozenset(ctx.syncing_imports), frozenset(ctx.step_loops), ctx.cuda_caller,
        frozenset(ctx.iterable_datasets), frozenset(ctx.forward_reached), frozenset(ctx.batch_movers), ctx.precision_from,
        frozenset(ctx.run_once), ctx.loaders_on_cuda_in,
    )


def context_facts(view: ProjectView, index: "ModuleIndex") -> dict[str, Any]:
    """The :class:`.context.ModuleContext` fields a view gives one parse of its file, by node: its
    entries are found again among the parse's functions by qualified name (the first of a name)."""
    hot_entries: tuple[HotEntry, ...] = ()
    if view.entries:
        by_name: dict[str, FunctionNode] = {}
        wanted = {e.qualname for e in view.entries}
        for funcs in index.functions.values():
            for func in funcs:
                name = qualname_of(func, index.parents)
                if name in wanted:
                    by_name.setdefault(name, func)
        hot_entries = tuple(
            HotEntry(by_name[e.qualname], e.batch, e.hot_path) for e in view.entries if e.qualname in by_name
        )
    return {
        "hot_entries": hot_entries,
        "cuda_from": view.cuda_from,
        "path_label": view.label,
        "loader_reads": view.loader_reads,
        "trains_via": view.trains_via,
        "project_defaults": {k: list(v) for k, v in view.defaults} if view.defaults is not None else None,
        "imported_constants": dict(view.imported_constants),
        "device_call": view.device_call,
        "auxiliary": view.auxiliary,
        "imported": view.imported,
        "returned_loaders": view.returned_loaders,
        "loader_classes": view.loader_classes,
        "training_loops": view.training_loops,
        "trainer_calls": view.trainer_calls,
        "steps_on_cuda_in": view.steps_on_cuda_in,
        "syncing_imports": view.syncing_imports,
        "step_loops": view.step_loops,
        "cuda_caller": view.cuda_caller,
        "iterable_datasets": view.iterable_datasets,
        "forward_reached": view.forward_reached,
        "batch_movers": view.batch_movers,
        "precision_from": view.precision_from,
        "run_once": view.run_once,
        "loaders_on_cuda_in": view.loaders_on_cuda_in,
    }
