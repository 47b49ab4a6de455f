"""DataLoader calls: find them, resolve their settings, link them to the loops that read them.

Shared by TT302 (no workers), TT303 (no pinned memory) and TT304 (workers
not persistent).  A setting the file does not pin down is ``unknown`` and the
rules stay silent on it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from ...findings import Applicability, Edit, Fix
from ..fixes import add_keywords_fix, code_for, parse_expression_snippet
from ..hotloops.finder import HotLoops, HotRegion, in_main_block, unwrap_iterable
from ..hotloops.run_once import evaluates_once
from ..hotloops.step_markers import is_fetched_batch
from ._bindings import resolve_dict, resolve_name
from ..file_kinds import is_test_file
from ..module_index import may_end_in
from ..syntax import bound_name, keyword_value
from ._generators import fetches_from, iterator_aliases
from ._loader_containers import container_aliases, read_name
from ._helpers import is_batch_expression, is_device_move
from ._tt305_host_built import numpy_made

if TYPE_CHECKING:
    from .base import RuleContext
    from ..defaults import Default

_DATALOADER = frozenset({"DataLoader"})  # the last part of each of these
DATALOADER_QUALNAMES = frozenset(
    {
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
        "torch_geometric.loader.DataLoader",
        "torch_geometric.data.DataLoader",  # PyG before 2.0
    }
)
# Position of each keyword in DataLoader's signature (dataset is 0).
_POSITIONS = {"num_workers": 5, "pin_memory": 7}
_MAX_LINK_DEPTH = 3
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Setting:
    """What one DataLoader keyword is set to, as far as the file says."""

    values: tuple[ast.expr, ...] = ()  # expressions it may be set to
    may_be_default: bool = True  # whether it may be left at its default
    unknown: bool = False  # a ``**kwargs`` the file cannot resolve may set it
    in_call: ast.expr | None = None  # the value written in the call itself
    from_kwargs: bool = False  # some value comes from a ``**dict``

    def all_values(self, predicate: Callable[[ast.expr], bool], default_matches: bool) -> bool:
        """Whether every way the keyword may end up satisfies ``predicate``."""
        if self.unknown:
            return False
        if self.may_be_default and not default_matches:
            return False
        return all(predicate(value) for value in self.values)

    @property
    def fixable(self) -> bool:
        """Whether a fix can set it on the call without clashing with a ``**dict``."""
        return not self.unknown and not self.from_kwargs


def is_dataloader(ctx: "RuleContext", node: ast.AST) -> bool:
    """A torch DataLoader, or a subclass of it this file defines or imports from its project
    (``class DataLoaderX(DataLoader)``, used as ``DataLoaderX(dataset, num_workers=...)``)."""
    if not isinstance(node, ast.Call):
        return False
    if ctx.call_qualname(node) in DATALOADER_QUALNAMES:
        return True
    name = node.func.id if isinstance(node.func, ast.Name) else None
    return name is not None and (name in ctx.loader_classes or name in own_loader_classes(ctx))


def own_loader_classes(ctx: "RuleContext") -> frozenset[str]:
    """The classes of this file whose bases include torch's DataLoader (one level)."""
    key = ("own_loader_classes",)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = frozenset(
            cls.name for cls in ctx.nodes_of(ast.ClassDef)  # type: ignore[attr-defined]
            if any(ctx.qualname(base) in DATALOADER_QUALNAMES for base in cls.bases)  # type: ignore[attr-defined]
        )
    return found  # type: ignore[return-value]


def dataloader_calls(ctx: "RuleContext") -> Iterator[ast.Call]:
    """Every torch DataLoader call of the module that training can run: none in test files, where speed
    is not the point, nor in a script beside the training code or the ``__main__`` demo of a file the
    project imports (:mod:`..project.roles`)."""
    if is_test_file(ctx.path, ctx.source) or "DataLoader" not in ctx.source or ctx.auxiliary is not None:
        return  # every spelling (alias, module attribute) names DataLoader somewhere
    key = ("dataloader_calls",)
    calls = ctx.memo.get(key)
    if calls is None:
        names = ctx.names_ending_in(_DATALOADER) | ctx.loader_classes | own_loader_classes(ctx)
        calls = ctx.memo[key] = [node for node in ctx.nodes_of(ast.Call)
                                 if may_end_in(node.func, _DATALOADER, names) and is_dataloader(ctx, node)
                                 and not (ctx.imported and in_main_block(ctx, node))]
    yield from calls  # type: ignore[misc]


def setting(ctx: "RuleContext", call: ast.Call, name: str) -> Setting:
    """Resolve keyword ``name`` of a DataLoader call, through ``**kwargs`` dicts."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return Setting(unknown=True)
    position = _POSITIONS.get(name)
    if position is not None and len(call.args) > position:
        value = call.args[position]
        return Setting((value,), may_be_default=False, in_call=value)
    value = keyword_value(call, name)
    if value is not None:
        return Setting((value,), may_be_default=False, in_call=value)
    values: list[ast.expr] = []
    may_be_default = True
    for keyword in call.keywords:
        if keyword.arg is not None:
            continue
        model = resolve_dict(ctx, keyword.value, call)
        if model is None:
            return Setting(unknown=True)
        found, absent = model.get(name)
        values.extend(found)
        may_be_default = may_be_default and absent
    return Setting(tuple(values), may_be_default, from_kwargs=bool(values))


def literal(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> object:
    """The constant an expression holds (through one local name, an argparse or config-class
    default, or a module constant), else ``...``."""
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("int", "bool")
            and expr.func.id not in ctx.aliases and len(expr.args) == 1 and not expr.keywords):
        inner = literal(ctx, expr.args[0], at)  # ``num_workers=int(opt.workers)``: the default, converted
        if isinstance(inner, (int, float, bool, str)):
            try:
                return int(inner) if expr.func.id == "int" else bool(inner)
            except ValueError:
                return ...
        return ...
    default = resolved_default(ctx, expr, at)
    if default is not None:
        return default.value
    if isinstance(expr, ast.Name):
        resolved = resolve_name(ctx, expr.id, at)
        if resolved is None:
            return ...
        expr = resolved
    if isinstance(expr, ast.Constant):
        return expr.value
    return ...


def resolved_default(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> "Default | None":
    """The default a non-literal knob holds: ``args.workers`` / ``cfg.num_workers`` (argparse or
    config-class default), or a module constant not bound in the scope."""
    if isinstance(expr, ast.Name):
        resolved = resolve_name(ctx, expr.id, at)
        if resolved is not None and not isinstance(resolved, ast.Constant):
            return resolved_default(ctx, resolved, at) if isinstance(resolved, ast.Attribute) else None
        if resolved is None:
            return ctx.constant_default(expr.id)
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, (ast.Name, ast.Attribute)):
        return ctx.attribute_default(expr.attr)
    return None


def resolution_note(ctx: "RuleContext", values: tuple[ast.expr, ...], at: ast.AST) -> str:
    """`` (`args.workers` is 0: the `--workers` default (main.py:9))`` for knobs resolved from defaults."""
    notes = []
    for value in values:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("int", "bool") and len(value.args) == 1:
            value = value.args[0]  # ``int(opt.workers)``: the default is the argument's
        default = resolved_default(ctx, value, at)
        if default is not None:
            notes.append(f"`{ctx.segment(value)}` is {default.value!r}: {default.where}")
    return f" ({'; '.join(notes)})" if notes else ""


def is_false(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> bool:
    return literal(ctx, expr, at) is False


def set_keyword_fix(
    ctx: "RuleContext", call: ast.Call, name: str, current: Setting, value: str, title: str,
    applicability: Applicability,
) -> Fix | None:
    """Set ``name=value`` on the call: rewrite the written value, or add the keyword."""
    if not current.fixable:
        return None
    if current.in_call is not None:
        node = current.in_call
        replacement = code_for(parse_expression_snippet(value))
        return Fix(title, applicability, (Edit(ctx.span(node), replacement),))
    return add_keywords_fix(ctx, call, [(name, value)], title, applicability)


# --- which loops read a loader ------------------------------------------------------


def loader_name(ctx: "RuleContext", call: ast.Call) -> str | None:
    """The variable or attribute a DataLoader is assigned to (``train_loader``, ``self.dl``), or the entry of a
    dict of loaders it is kept under (``loaders["train"]`` for ``loaders = {"train": DataLoader(...)}`` or
    ``self.data_loader["train"] = DataLoader(...)``: see :func:`held_name`)."""
    parent = ctx.parents.get(call)
    key = None
    if isinstance(parent, ast.Dict) and call in parent.values:  # ``{"train": DataLoader(...), ...}``
        entry = parent.keys[parent.values.index(call)]
        key = entry.value if isinstance(entry, ast.Constant) and isinstance(entry.value, str) else None
        call, parent = parent, ctx.parents.get(parent)  # type: ignore[assignment]
        if key is None:
            return None
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is call:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if len(targets) == 1:
            holder = held_name(targets[0])
            return holder if key is None or holder is None or "[" in holder else f"{holder}[{key!r}]"
    return None


def held_name(node: ast.AST) -> str | None:
    """:func:`bound_name`, or ``loaders['train']`` for a string-keyed entry of a bound name (a dict of loaders)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        holder = bound_name(node.value)
        return f"{holder}[{node.slice.value!r}]" if holder is not None else None
    return bound_name(node)


def _loop_reads(loop: ast.AST, name: str) -> bool:
    """``for b in loader``, ``enumerate(tqdm(loader))``, or a wrapper taking the loader first
    (``metric_logger.log_every(loader, 10, header)``)."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    if read_name(unwrap_iterable(loop.iter)) == name:
        return True
    node: ast.expr = loop.iter
    for _ in range(4):
        if not (isinstance(node, ast.Call) and node.args):
            return False
        node = node.args[0]
        if isinstance(node, (ast.Name, ast.Subscript)) and read_name(node) == name:
            return True
    return False


def _argument_index(
    ctx: "RuleContext", functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]
) -> dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]]:
    """Name passed -> (function, parameter) pairs, for every call of a function of this module.

    Built once per loader (one pass over the nodes), so following a loader
    through parameters is a lookup, not a scan of every call per step.
    """
    index: dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]] = {}
    params: dict[ast.AST, list[str]] = {}
    for node in ctx.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        # Only names can be followed, and ``super().__init__(...)`` is not a call of this module's functions.
        passed = [(i, name) for i, name in enumerate(map(read_name, node.args)) if name]
        named = [(k.arg, name) for k in node.keywords if k.arg and (name := read_name(k.value))]
        if not (passed or named) or _calls_super(node):
            continue
        for func in functions.get(bound_name(node.func) or "", ()):
            if func not in params:
                params[func] = [a.arg for a in [*func.args.posonlyargs, *func.args.args] if a.arg not in ("self", "cls")]
            positional = params[func]
            for position, name in passed:
                if position < len(positional):
                    index.setdefault(name, []).append((func, positional[position]))
            for keyword, name in named:
                index.setdefault(name, []).append((func, keyword))
    return index


def _calls_super(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def _local_scope(ctx: "RuleContext", call: ast.Call, name: str) -> ast.AST | None:
    """The function a loader assigned to a plain name lives in (another function's ``loader`` is
    another loader, when its own function iterates it), or None for module-level names and attributes."""
    if "." in name:
        return None
    function = ctx.enclosing_function(call)
    if function is None or any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in ast.walk(function)):
        return None
    return function


def loops_reading(ctx: "RuleContext", call: ast.Call) -> list[HotRegion]:
    """Step loops that iterate this DataLoader, directly, by name, through a parameter, or through
    an iterator over it (``it = cycle(loader)`` ... ``next(it)``, see :mod:`._generators`)."""
    parent = ctx.parents.get(call)
    while isinstance(parent, ast.Call):  # enumerate(tqdm(DataLoader(...)))
        parent = ctx.parents.get(parent)
    if isinstance(parent, (ast.For, ast.AsyncFor)) and unwrap_iterable(parent.iter) is call:
        return [r for r in ctx.hot.step_loops if r.node is parent]
    name = loader_name(ctx, call)
    if name is None:
        return []
    receivers = ctx.memo.get("loaders-argument-index")
    if receivers is None:  # one index per module, shared by every loader and rule
        receivers = ctx.memo["loaders-argument-index"] = _argument_index(ctx, ctx.functions)
    local = _local_scope(ctx, call, name)
    found = _loops_reading_name(ctx, name, local, receivers)
    if not found and local is not None:  # handed on in a container (``loaders = [train_loader, ...]``) and
        found = _loops_reading_name(ctx, name, None, receivers)  # unpacked under its own name elsewhere
    return found


def _loops_reading_name(
    ctx: "RuleContext", name: str, scope: ast.AST | None, receivers: dict[str, list[tuple[ast.AST, str]]]
) -> list[HotRegion]:
    """Step loops (inside ``scope`` unless it is None) that iterate ``name``, or a parameter it is passed as."""
    found: list[HotRegion] = []
    seen: set[tuple[ast.AST | None, str]] = set()
    frontier: list[tuple[ast.AST | None, str]] = [(scope, name)]
    containers = container_aliases(ctx)
    for _ in range(_MAX_LINK_DEPTH):
        next_frontier: list[tuple[ast.AST | None, str]] = []
        for within, current in frontier:  # (grows: the names it is read by in containers join at this depth)
            if (within, current) in seen:
                continue
            seen.add((within, current))
            frontier.extend((within, alias) for alias in containers.get(current, ()))
            aliases = iterator_aliases(ctx).get(current, [])
            for region in ctx.hot.step_loops:
                inside = within is None or any(a is within for a in ctx.ancestors(region.node))
                if not inside or region in found:
                    continue
                if _loop_reads(region.node, current) or fetches_from(region.node, current) or any(
                    _loop_reads(region.node, alias) or fetches_from(region.node, alias) for alias in aliases
                ):
                    found.append(region)
            next_frontier.extend(receivers.get(current, ()))
        frontier = next_frontier
    return found


def read_once_only(ctx: "RuleContext", call: ast.Call) -> bool:
    """The loader is iterated only by the one-pass evaluation of a function the project runs once (the final test)."""
    name = loader_name(ctx, call) if ctx.run_once else None
    if name is None:
        return False
    readers = [loop for loop in ctx.nodes_of((ast.For, ast.AsyncFor)) if _loop_reads(loop, name)]
    return bool(readers) and all(evaluates_once(ctx, loop, ctx.run_once) for loop in readers)  # type: ignore[arg-type]


def loader_reads_elsewhere(ctx: "RuleContext", call: ast.Call) -> list:
    """Step loops of other project files that iterate this loader (see :mod:`..project`)."""
    if not ctx.loader_reads:
        return []
    name = loader_name(ctx, call)
    return [read for read in ctx.loader_reads if read.name == name] if name else []


RETURNED = "<returned>"  # the loader name of ``return DataLoader(...)``, which names none (:mod:`..project.returned_loaders`)


def returned_and_iterated(ctx: "RuleContext", call: ast.Call) -> list:
    """This loader returned by its factory and iterated every epoch by a caller's step loop (:mod:`..project`)."""
    if not ctx.returned_loaders:
        return []
    name = loader_name(ctx, call) or (RETURNED if isinstance(ctx.parents.get(call), ast.Return) else None)
    function = ctx.enclosing_function(call)
    return [read for read in ctx.returned_loaders
            if name and read.name == name and function is not None and read.factory == function.name]


def regions_reached(
    ctx: "RuleContext", roots: list[HotRegion], hot: HotLoops | None = None, nested: bool = False
) -> list[HotRegion]:
    """The given regions plus the per-step functions they call (and, with ``nested``, the step loops nested
    in them), transitively (``hot``: the hot loops to read, ``ctx.hot`` unless given)."""
    hot = ctx.hot if hot is None else hot
    reached = list(roots)
    changed = True
    while changed:
        changed = False
        for region in hot.regions:
            if region in reached:
                continue
            if region.via is not None and hot.region_of(region.via) in reached or nested and _nested_in(ctx, region, reached):
                reached.append(region)
                changed = True
    return reached


def _nested_in(ctx: "RuleContext", region: HotRegion, regions: list[HotRegion]) -> bool:
    """A step loop inside one of ``regions``' loops (``for group in loader: for batch in group: ...``)."""
    if region.kind != "step-loop":
        return False
    loops = {id(r.node) for r in regions if r.kind == "step-loop"}
    return bool(loops) and any(id(ancestor) in loops for ancestor in ctx.ancestors(region.node))


def moves_data_to_device(ctx: "RuleContext", regions: list[HotRegion] | None, hot: HotLoops | None = None) -> bool:
    """Whether per-step code (of ``regions``, or anywhere) copies tensors to a device (``hot``: the
    hot loops to read, ``ctx.hot`` unless given: the project model asks before it builds ``ctx``'s
    final context)."""
    hot = ctx.hot if hot is None else hot
    allowed = None if regions is None else set(map(id, regions_reached(ctx, regions, hot, nested=True)))
    for call, region in hot.nodes(ast.Call):
        if allowed is not None and id(region) not in allowed:
            continue
        if is_device_move(call, ctx) and _moves_batch(ctx, call, region, hot):
            return True
        if _hands_batch_to_device(ctx, call, region):
            return True
    return False


def _hands_batch_to_device(ctx: "RuleContext", call: ast.Call, region: HotRegion) -> bool:
    """``to_device(batch, device)``, ``prepare(batch, device=args.device)``: the step's data handed to a
    helper together with a device, which is what such a helper is for; or to a project function that
    moves it (``model.set_input(images, labels)``, see :mod:`..project.batch_movers`)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    if ctx.batch_movers and called_name(call) in ctx.batch_movers:  # ``model.set_input(x, y)``: another file moves it
        return any(is_batch_expression(v, region) for v in values)
    if len(values) < 2 or not any(is_batch_expression(v, region) for v in values):
        return False
    if (ctx.call_qualname(call) or "").startswith("torch."):
        return False  # ``torch.randint(..., device=x.device)``: a tensor made on the device, not data moved
    return any(k.arg == "device" for k in call.keywords) or any(_names_a_device(ctx, v) for v in values)


def _names_a_device(ctx: "RuleContext", node: ast.expr) -> bool:
    """``device``, ``args.device``, ``x.device``, ``"cuda:0"``, ``torch.device(...)`` (not a GPU count or a rank)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] == "cuda"
    if isinstance(node, ast.Call):
        return ctx.call_qualname(node) == "torch.device"
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "device" in name.lower() or name == "dev"


def _moves_batch(ctx: "RuleContext", call: ast.Call, region: HotRegion, hot: HotLoops) -> bool:
    """``x.to(d)`` on batch data, or inside a comprehension over the batch."""
    receiver = call.func.value  # type: ignore[attr-defined]
    if is_fetched_batch(call):  # ``next(it).to(d)``: moved as fetched
        return True
    if is_batch_expression(receiver, region):
        return not numpy_made(ctx, receiver, call, region.batch_names, hot)  # a mask NumPy draws for the step: not loaded
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, ast.stmt):
            return False
        if isinstance(ancestor, _COMPREHENSIONS):
            if any(is_batch_expression(gen.iter, region) for gen in ancestor.generators):
                return True
    return False


_EPOCH_WORDS = ("epoch", "epochs")
_NOT_ITERATING = frozenset({"len", "print", "isinstance", "getattr", "hasattr", "id", "type", "str", "repr"})


def _epoch_loop(loop: ast.AST) -> bool:
    """``for epoch in range(start_epoch, args.epochs)``: a loop named for epochs, by its target or its range."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    names = [n.id.lower() for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    names += [n.id.lower() if isinstance(n, ast.Name) else n.attr.lower()
              for n in _walk_positional(loop.iter) if isinstance(n, (ast.Name, ast.Attribute))]
    return any(word in name for name in names for word in _EPOCH_WORDS)


def _walk_positional(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without keyword arguments: ``tqdm(loader, desc=f"Epoch {epoch}")`` iterates the loader,
    whatever its progress bar says."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child for child in ast.iter_child_nodes(current) if not isinstance(child, ast.keyword))


def handed_on_every_epoch(ctx: RuleContext, creation: ast.Call) -> tuple[str, int] | None:
    """(callee, line) where a loader made outside an epoch loop is handed, inside it, to a call the project
    cannot resolve (``trainer.train(epoch, train_loader)`` on a trainer picked from a registry): a loader
    passed once per epoch is iterated once per epoch."""
    name = loader_name(ctx, creation)
    if name is None or "." in name:
        return None
    scope = ctx.enclosing_function(creation) or ctx.tree
    for loop in ctx.nodes_of((ast.For, ast.AsyncFor)):
        if (ctx.enclosing_function(loop) or ctx.tree) is not scope or not _epoch_loop(loop):
            continue
        if any(a is loop for a in ctx.ancestors(creation)):
            continue  # a fresh loader every epoch: persistence cannot help
        for node in (n for statement in [*loop.body, *loop.orelse] for n in ast.walk(statement)):
            if not isinstance(node, ast.Call) or called_name(node) in _NOT_ITERATING:
                continue
            if any(isinstance(a, ast.Name) and a.id == name for a in [*node.args, *(k.value for k in node.keywords)]):
                return ctx.segment(node.func)[:40], loop.lineno  # type: ignore[attr-defined]
    return None


def called_name(call: ast.Call) -> str | None:
    """``f`` in ``f(...)`` and ``obj.f(...)``."""
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
