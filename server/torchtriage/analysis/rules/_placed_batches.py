"""Step data that is already on the device when the step copies it again (TT301's no-op copies).

Two shapes, both common in real training code:

* a loader handed to a library that places every batch on the device itself:
  ``loader = accelerator.prepare(loader)`` (Hugging Face Accelerate) or
  ``fabric.setup_dataloaders(loader)`` (Lightning Fabric), then ``x.to(device)``
  in the loop over it;
* a value computed from batch tensors the step has already moved
  (``batch = [b.to(device) for b in batch]``, ``texts, lengths = batch``, then
  ``length_to_mask(lengths).to(device)``).

Neither copies host memory; a host array wrapped in a tensor (``torch.from_numpy(y)``)
still does, and callers keep reporting that.
"""

from __future__ import annotations

import ast

from ..hotloops.finder import HotRegion
from ..hotloops.step_markers import bound_names, fetched_call, names_in, names_outside_shapes, unwrap_iterable
from ..syntax import bound_name
from ._generators import iterator_aliases
from ._helpers import is_device_move
from .base import RuleContext

_PLACING_SETUPS = frozenset({"setup_dataloaders"})  # Fabric: moves every batch by default


def placed_loader_loop(ctx: RuleContext, region: HotRegion) -> bool:
    """Whether ``region`` is a step loop over a loader whose batches a library already puts on the device."""
    node = region.node
    if region.kind != "step-loop" or not isinstance(node, (ast.For, ast.AsyncFor)):
        return False
    name = bound_name(unwrap_iterable(node.iter))
    return name is not None and name in _placed_loaders(ctx)


def fetched_from_placed(ctx: RuleContext, call: ast.Call) -> bool:
    """``next(it).to(device)`` where ``it`` is such a loader, or an iterator over one (``self.dl = cycle(dl)``)."""
    node = fetched_call(call)
    if not (node is not None and isinstance(node.func, ast.Name) and node.func.id == "next" and node.args):
        return False
    placed = _placed_loaders(ctx)
    if not placed:
        return False
    source = bound_name(node.args[0])
    return source is not None and (source in placed or any(source in iterator_aliases(ctx).get(name, ()) for name in placed))


def _placed_loaders(ctx: RuleContext) -> frozenset[str]:
    """Names bound to what ``accelerator.prepare(...)`` / ``fabric.setup_dataloaders(...)`` returns."""
    found = ctx.memo.get("placed-loaders")
    if found is None:
        names: set[str] = set()
        if "prepare(" in ctx.source or "setup_dataloaders(" in ctx.source:
            for node in ctx.nodes_of(ast.Assign):
                value = node.value  # type: ignore[attr-defined]
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _places_batches(value.func):
                    for target in node.targets:  # type: ignore[attr-defined]
                        names |= bound_names(target)
        found = ctx.memo["placed-loaders"] = frozenset(names)
    return found  # type: ignore[no-any-return]


def _places_batches(func: ast.Attribute) -> bool:
    if func.attr in _PLACING_SETUPS:
        return True
    owner = bound_name(func.value) or ""
    return func.attr == "prepare" and "accelerator" in owner.lower()


def computed_from_moved(ctx: RuleContext, receiver: ast.AST, region: HotRegion) -> bool:
    """``length_to_mask(lengths)`` where every batch name it reads was moved to the device earlier in the
    step: a project helper's result from device tensors is on the device already."""
    if not isinstance(receiver, ast.Call) or (ctx.qualname(receiver.func) or "").startswith("torch."):
        return False
    read = set().union(*(names_in(arg) for arg in [*receiver.args, *(k.value for k in receiver.keywords)]))
    batch = read & region.batch_names
    return bool(batch) and batch <= _moved_names(ctx, region)


def _moved_names(ctx: RuleContext, region: HotRegion) -> frozenset[str]:
    """Names the region binds to tensors it moved to a device: ``x = x.to(d)``, ``batch = [b.to(d) for b
    in batch]`` and the names unpacked from such a list (``texts, lengths = batch``)."""
    key = ("placed-moved-names", id(region))
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = frozenset(_fold_moves(ctx, region, _region_assigns(ctx, region), derived=False))
    return found  # type: ignore[no-any-return]


def moved_before(ctx: RuleContext, region: HotRegion, line: int) -> set[str]:
    """The names the region has bound by ``line`` to tensors on the device: moved there (``batch_y =
    batch_y.float().to(d)`` a few lines up), as :func:`_moved_names` reads them, or computed from step data
    that was (``dec_inp = torch.zeros_like(batch_y[:, -n:])`` after that), in order up to there."""
    before = [node for node in _region_assigns(ctx, region) if node.lineno < line]
    return _fold_moves(ctx, region, before, derived=True)


def _region_assigns(ctx: RuleContext, region: HotRegion) -> list[ast.Assign]:
    """The region's own assignments in source order (kept for the analysis)."""
    key = ("placed-assigns", id(region))
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = sorted((n for n, owner in ctx.hot.nodes(ast.Assign) if owner is region),
                                       key=lambda n: (n.lineno, n.col_offset))
    return found  # type: ignore[no-any-return]


def _fold_moves(ctx: RuleContext, region: HotRegion, assigns: list[ast.Assign], derived: bool) -> set[str]:
    """The names bound to device tensors after ``assigns`` in order: a move (or a name already moved) binds its
    targets, any other value unbinds them; with ``derived``, a value computed only from moved step data binds too."""
    moved: set[str] = set()
    for node in assigns:
        value = node.value
        bound = set().union(*(bound_names(target) for target in node.targets))
        on_device = _moves(ctx, value) or (isinstance(value, ast.Name) and value.id in moved)
        if derived and not on_device:
            read = names_outside_shapes(value) & region.batch_names
            on_device = bool(read) and read <= moved
        moved = moved | bound if on_device else moved - bound
    return moved


def _moves(ctx: RuleContext, value: ast.expr) -> bool:
    """A device move, or a list / tuple / comprehension of nothing but device moves."""
    if isinstance(value, ast.Call):
        return is_device_move(value, ctx)
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return isinstance(value.elt, ast.Call) and is_device_move(value.elt, ctx)
    if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
        return all(isinstance(e, ast.Call) and is_device_move(e, ctx) for e in value.elts)
    return False
