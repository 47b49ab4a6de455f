"""Syntactic markers of a training/eval step, and of rarely-true guards.

Pure predicates over ``ast`` nodes, no module context: what a backward call,
an optimizer step, a loader-like iterable, a model call on batch data, a
counter and a logging flag look like.  :mod:`.hotloops` combines them.

Names are judged by their *tokens* (``is_last_batch`` -> is, last, batch;
``optimizerD`` -> optimizer, d), so ``interval`` is not read as ``val`` and
``logits`` is not read as ``log``.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from ..incremental.levels import child_nodes
from ..incremental.walks import scope_walk

SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)
# Lightning methods that are one step, and the hooks that run once per batch.
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

_MODEL_NAME = re.compile(
    r"^(?!(create|build|get|load|make|init|save|setup|prepare|wrap|unwrap|copy|export|register|import|"
    r"update|freeze|convert|resume)_)"
    r"((\w+_)?(model|net|network|classifier|generator|discriminator|encoder|decoder|policy|backbone|"
    r"teacher|student|unet|vae|gpt|transformer|critic|actor)|(model|net)_\w+|module|net_?[a-z0-9]|\w+(net|model))$",
    re.I,
)
MODEL_NAME = _MODEL_NAME
_LOADER_NAME = re.compile(
    r"(loader|(^|_)dl$|^dl_|batches$|batch_iter|data_iter|(^|_)iterator$|dataloaders?$)", re.I
)
_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser|scaler)(s|_?[a-z0-9]+)?$|^optimizer", re.I)
_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
ITERABLE_WRAPPERS = frozenset(
    {"enumerate", "tqdm", "iter", "zip", "islice", "track", "progress", "cycle", "chain", "prefetch", "auto"}
)
COUNTER_TOKENS = frozenset(
    {"step", "steps", "iter", "iters", "iteration", "idx", "index", "epoch", "count", "counter",
     "update", "updates"}
)
_COUNTER_WHOLE_NAMES = frozenset({"i", "j", "k", "n", "it", "t", "batch_i", "bi"})
FLAG_TOKENS = frozenset(
    {"last", "first", "final", "log", "logging", "print", "display", "verbose", "debug", "save",
     "checkpoint", "ckpt", "report", "vis", "visualize", "plot", "sample", "eval", "evaluate", "val",
     "validate", "validation", "should", "dry", "dump", "snapshot", "show", "summary", "tensorboard", "wandb"}
)
_BATCH_TOKENS = frozenset(
    {"batch", "inputs", "input", "x", "y", "xb", "yb", "images", "image", "imgs", "img", "targets",
     "target", "labels", "label", "data", "sample", "samples", "tokens", "ids", "src", "tgt", "features"}
)
_OPTIMIZER_WORK = frozenset({"step", "zero_grad", "backward", "update"})


def words(name: str) -> list[str]:
    """Lower-case words of an identifier, in order: ``is_lastBatch`` -> [is, last, batch]."""
    return [t.lower() for part in name.split("_") for t in _TOKEN.findall(part)]


def tokens(name: str) -> set[str]:
    """Lower-case words of an identifier: ``is_lastBatch`` -> {is, last, batch}."""
    return set(words(name))


def last_name(node: ast.AST) -> str:
    """``a.b.c`` -> ``c``; ``f(x)`` -> ``f``; ``d[k]`` -> ``d``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return last_name(node.func)
    if isinstance(node, ast.Subscript):
        return last_name(node.value)
    return ""


def names_in(node: ast.AST) -> set[str]:
    """The names under ``node``, and ``self.x`` for each attribute of ``self`` there: data kept on the
    instance (``self.gt = data["gt"].cuda()``) makes ``self.gt`` batch data, not everything on ``self``
    (``self.opt["scale"]`` stays a setting)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            found.add(f"self.{n.attr}")
    return found


def own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a body, not descending into nested definitions, nor into nested loops'
    bodies (a nested ``for``'s iterable is evaluated once per outer iteration, so it is kept)."""
    stack: list[ast.AST] = [n for n in reversed(list(body)) if not isinstance(n, SCOPE_NODES)]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.For, ast.AsyncFor)):
            stack.append(node.iter)
            continue
        if isinstance(node, ast.While):
            continue
        for child in child_nodes(node):
            if not isinstance(child, SCOPE_NODES):
                stack.append(child)


# --- what a step does -----------------------------------------------------------


def is_backward_call(node: ast.AST) -> bool:
    """``loss.backward()``, ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"


def is_optimizer_name(name: str) -> bool:
    return bool(_OPTIMIZER_NAME.search(name)) and "sched" not in name.lower()


def is_optimizer_step(node: ast.AST) -> bool:
    """``optimizer.step()``, ``opt_g.step()``, ``scaler.step(optimizer)``; not schedulers."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"):
        return False
    receiver = last_name(node.func.value)
    if "sched" in receiver.lower():
        return False
    return is_optimizer_name(receiver) or any(is_optimizer_name(last_name(arg)) for arg in node.args)


def is_scaler_step(node: ast.AST) -> bool:
    """``loss_scaler(loss, optimizer, parameters=...)``: a loss scaler called with an optimizer (timm's
    ``NativeScaler``) runs backward and steps that optimizer itself."""
    if not (isinstance(node, ast.Call) and "scaler" in last_name(node.func).lower()):
        return False
    return any(is_optimizer_name(last_name(arg)) and "scaler" not in last_name(arg).lower()
               for arg in [*node.args, *(k.value for k in node.keywords)])


def does_optimizer_work(body: Iterable[ast.AST]) -> bool:
    """Whether code steps an optimizer, zeroes grads or runs backward (an accumulation boundary)."""
    for node in own_nodes(body):
        if is_backward_call(node) or is_optimizer_step(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _OPTIMIZER_WORK and is_optimizer_name(last_name(node.func.value)):
                return True
    return False


def unwrap_iterable(node: ast.AST) -> ast.AST:
    """``enumerate(tqdm(loader))`` -> ``loader``."""
    while isinstance(node, ast.Call) and node.args and last_name(node.func) in ITERABLE_WRAPPERS:
        node = node.args[0]
    return node


def is_loader_like(node: ast.AST, loader_vars: set[str]) -> bool:
    """An iterable of batches: a DataLoader call, a loader variable, ``dataloaders[phase]``; also a ``zip`` of a
    progress bar or a counter with one (``zip(pbar, train_loader)``)."""
    zipped = _zipped_with(node)
    if zipped is not None and any(_zipped_loader(arg, loader_vars) for arg in zipped.args):
        return True
    return _is_loader_like(node, loader_vars)


def _zipped_loader(node: ast.AST, loader_vars: set[str]) -> bool:
    """A loader beside something else in a ``zip``; not a list of loaders (``zip(names, valid_dataloaders)``,
    ``zip(cfg.DATASETS.TEST, data_loaders_val)``)."""
    return _is_loader_like(node, loader_vars) and not {"loaders", "dataloaders"} & set(words(last_name(unwrap_iterable(node))))


def _zipped_with(node: ast.AST) -> ast.Call | None:
    """The ``zip(...)`` call an iterable is or wraps (``enumerate(zip(t, loader))``), if any."""
    while isinstance(node, ast.Call) and node.args and last_name(node.func) in ITERABLE_WRAPPERS:
        if last_name(node.func) == "zip":
            return node
        node = node.args[0]
    return None


def _is_loader_like(node: ast.AST, loader_vars: set[str]) -> bool:
    inner = unwrap_iterable(node)
    name = last_name(inner)
    if isinstance(inner, ast.Call):
        return "dataloader" in name.lower() or bool(_LOADER_NAME.search(name))
    if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
        return name in loader_vars or bool(_LOADER_NAME.search(name))
    return False


def is_model_call(node: ast.AST, data_names: set[str]) -> bool:
    """``model(x)``, ``self.net(**batch)``, ``model.forward(x)`` on the loop's data.

    With no data names known (``while`` loops, ``range`` loops) any call with
    arguments counts.
    """
    if not isinstance(node, ast.Call) or isinstance(node.func, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("forward", "generate"):
        func = func.value
    name = last_name(func)
    if not _MODEL_NAME.match(name) or name[:1].isupper():  # `Generator(...)` builds, it does not run
        return False
    args = [*node.args, *(k.value for k in node.keywords)]
    return any(names_in(arg) & data_names for arg in args) if data_names else bool(args)


# words that, after "batch" in a function's name, make it about a batch's size or position, not a fetch
# (``check_train_batch_size(model)``, ``get_batch_idx()``): it returns a number, not a batch
_BATCH_QUALITIES = frozenset({"size", "sizes", "idx", "index", "indices", "count", "num", "len", "length", "shape",
                              "dim", "norm", "stats", "mode", "sampler"})


def is_batch_fetch(value: ast.AST) -> bool:
    """``next(it)``, ``get_batch('train')``, ``loader.next_batch()``: a fresh batch each call; not a call
    about a batch's size (``check_train_batch_size(...)``, ``batch_size()``).  Also the batch a loader
    thread puts on a queue (``queue.get()``, ``self.data_queue.get()``)."""
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func)
    if name in ("next", "__next__"):
        return True
    receiver = value.func.value if isinstance(value.func, ast.Attribute) else None
    if receiver is not None and name == "get" and "queue" in words(last_name(receiver)):
        return True
    return is_batch_fetch_name(name)


def fetched_call(value: ast.AST) -> ast.Call | None:
    """The fetch a batch is moved or cast from on the way (``next(it)`` of ``next(it).to(device)``,
    ``next(it).cuda().float()``): the innermost receiver of a chain of method calls, when it is a fetch
    (not ``next(model.parameters())``); else None."""
    node = value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    if node is value or not is_batch_fetch(node):
        return None
    if any(isinstance(n, ast.Attribute) and n.attr in ("parameters", "buffers", "named_parameters", "children", "modules")
           for n in ast.walk(node)):
        return None
    return node  # type: ignore[return-value]


def is_fetched_batch(value: ast.AST) -> bool:
    """A fetched batch moved or cast on the way (see :func:`fetched_call`)."""
    return fetched_call(value) is not None


def is_batch_fetch_name(name: str) -> bool:
    """``next_batch``, ``get_batch``, ``sample_batch``: a function named for handing out a batch (not its size)."""
    parts = words(name)
    return any(word in ("batch", "batches") and (i + 1 == len(parts) or parts[i + 1] not in _BATCH_QUALITIES)
               for i, word in enumerate(parts))


def looks_like_batch_param(name: str) -> bool:
    """``batch``, ``images``, ``input_ids``, ``xb``; not ``batch_size`` or ``batch_idx``."""
    parts = words(name)
    return bool(parts) and parts[-1] in _BATCH_TOKENS


# --- names bound by a loop or a step function ---------------------------------------


def target_names(target: ast.AST, iterable: ast.AST) -> tuple[set[str], set[str]]:
    """(batch names, counter names) bound by a for-loop target."""
    counters: set[str] = set()
    if (
        isinstance(iterable, ast.Call)
        and last_name(iterable.func) == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
    ):
        counters |= names_in(target.elts[0])
        target = ast.Tuple(elts=target.elts[1:], ctx=ast.Store())
    elif (  # ``pbar = tqdm(enumerate(loader))`` ... ``for i, (imgs, targets) in pbar``: the index named as a counter
        isinstance(iterable, ast.Name) and isinstance(target, ast.Tuple) and len(target.elts) == 2
        and isinstance(target.elts[0], ast.Name) and target.elts[0].id in _COUNTER_WHOLE_NAMES
    ):
        counters.add(target.elts[0].id)
        target = target.elts[1]
    if isinstance(iterable, ast.Call) and last_name(iterable.func) == "zip" and isinstance(target, ast.Tuple) \
            and len(target.elts) == len(iterable.args) and any(_zipped_loader(a, set()) for a in iterable.args):
        # ``for i, (x, y) in zip(pbar, loader)``: what the loader hands over is the batch, the rest counts
        batch: set[str] = set()
        for element, source in zip(target.elts, iterable.args):
            (batch if _zipped_loader(source, set()) else counters).update(names_in(element))
        return batch, counters
    names = names_in(target)
    inner = unwrap_iterable(iterable)
    if isinstance(inner, ast.Call) and last_name(inner.func) in ("range", "trange", "count"):
        return set(), counters | names
    return names, counters


def propagate_batch_names(body: list[ast.stmt], names: set[str], own: Iterable[ast.AST] | None = None) -> set[str]:
    """Names assigned from batch names (``x, y = batch``, ``x = x.to(d)``) or fetched batches, and the parts of
    batch containers a ``for`` walks (``own``: ``own_nodes(body)``, when the caller has it already)."""
    result = set(names)
    nodes = list(own_nodes(body) if own is None else own)
    assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
               or isinstance(n, (ast.For, ast.AsyncFor))]
    inner = [n for loop in nodes if isinstance(loop, LOOP_NODES) for n in scope_walk(loop, SCOPE_NODES)
             if isinstance(n, ast.Assign) and _is_access_path(n.value)]  # (assignments in a nested loop's body)
    for _ in range(2):
        for node in assigns:
            if isinstance(node, (ast.For, ast.AsyncFor)):
                result |= _elements_of_batch(node.target, node.iter, result)
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if is_shape_read(node.value):  # ``B, C, w, h = x.shape``: Python ints, not batch data
                continue
            if is_batch_fetch(node.value) or names_in(node.value) & result:  # type: ignore[arg-type]
                for target in targets:
                    result |= bound_names(target)
        for node in inner:  # a part of the batch taken inside a loop of the step: ``y = waves[i][a:b]``
            if _root_name(node.value) in result:  # type: ignore[attr-defined]
                for target in node.targets:  # type: ignore[attr-defined]
                    result |= bound_names(target)
    return result


def _is_access_path(node: ast.expr) -> bool:
    """``waves[i][a:b]``, ``batch["image"]``: a part of a value reached by indexing, with no call."""
    return isinstance(node, ast.Subscript) and _root_name(node) is not None and not is_shape_read(node)


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _elements_of_batch(target: ast.AST, iterable: ast.AST, batch: set[str]) -> set[str]:
    """The names a ``for`` binds to the parts of step data: ``for t in inputs``, ``for i, t in enumerate(inputs)``,
    ``for k, t in batch.items()`` and ``for t in batch.values()`` (not the index or the key)."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "enumerate" \
            and len(iterable.args) == 1 and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        return _elements_of_batch(target.elts[1], iterable.args[0], batch)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args \
            and iterable.func.attr in ("items", "values"):
        if iterable.func.attr == "items":
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                return set()
            target = target.elts[1]
        iterable = iterable.func.value
    if isinstance(iterable, ast.Name) and iterable.id in batch or isinstance(iterable, ast.Attribute) and names_in(iterable) & batch:
        return bound_names(target)
    return set()


def bound_names(target: ast.AST) -> set[str]:
    """The names an assignment target binds: ``x``, ``x, y``, ``*rest``, ``self.x`` and ``self.x.y``
    (``self.x``, see :func:`names_in`), and the container of ``out[key]`` (``out``), not the names in
    ``key`` (``losses[f"{prefix}_loss"] = loss``)."""
    if isinstance(target, ast.Subscript):
        return bound_names(target.value)
    if isinstance(target, ast.Attribute):
        root = target
        while isinstance(root.value, ast.Attribute):
            root = root.value
        if isinstance(root.value, ast.Name) and root.value.id == "self":
            return {f"self.{root.attr}"}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(bound_names(element) for element in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return names_in(target)


def is_shape_read(value: ast.AST | None, depth: int = 0) -> bool:
    """``x.shape``, ``x.shape[-1]``, ``x.size()``, ``x.size(0)``, ``x.dim()``, ``x.ndim``, ``len(x)``; a tuple of
    them (``(x.shape[2], x.shape[3])``) and arithmetic of them with numbers (``x.shape[-1] // 2``)."""
    if isinstance(value, (ast.Tuple, ast.List, ast.BinOp)):
        parts = value.elts if not isinstance(value, ast.BinOp) else [value.left, value.right]
        if not parts or depth > 4:
            return False
        shapes = [is_shape_read(e, depth + 1) for e in parts]
        return any(shapes) and all(shape or isinstance(e, ast.Constant) for shape, e in zip(shapes, parts))
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Attribute):
        return value.attr in ("shape", "ndim")
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute):
            return value.func.attr in ("size", "dim", "numel")
        return isinstance(value.func, ast.Name) and value.func.id == "len"
    return False


def names_outside_shapes(node: ast.AST) -> set[str]:
    """:func:`names_in` of an expression, leaving out what it reads only through a shape read
    (``table(x.shape[1])[: x.size(1)]`` reads ``table``): a value built from a batch's sizes is not the batch's data."""
    if is_shape_read(node):
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    found: set[str] = set()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        found.add(f"self.{node.attr}")  # as :func:`names_in` reads it
    for child in ast.iter_child_nodes(node):
        found |= names_outside_shapes(child)
    return found


def incremented_counters(body: list[ast.stmt]) -> set[str]:
    """``step += 1`` / ``self.global_step += 1`` in a loop body: names that count steps."""
    found: set[str] = set()
    for node in own_nodes(body):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            if isinstance(node.value, ast.Constant) and node.value.value == 1:
                name = last_name(node.target)
                if name:
                    found.add(name)
    return found


def derived_counters(body: list[ast.stmt], counters: set[str]) -> set[str]:
    """Names a loop body sets from its counter by arithmetic (``ni = i + nb * epoch``, ``global_step =
    epoch * len(loader) + step``): they grow by one each step too, so ``if ni < 3:`` holds on a few steps."""
    found: set[str] = set()
    for node in own_nodes(body):
        if (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, (ast.Add, ast.Sub))
            and names_in(node.value) & counters
        ):
            found.add(node.targets[0].id)
    return found


# --- rarely-true guards ------------------------------------------------------------


def _is_modulo(node: ast.AST) -> bool:
    """``step % every`` with a modulus other than a literal 1 (and not string formatting)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
        return False
    if isinstance(node.left, ast.Constant) and isinstance(node.left.value, (str, bytes)):
        return False
    return not (isinstance(node.right, ast.Constant) and node.right.value == 1)


def _is_counter_expr(node: ast.AST, counters: set[str]) -> bool:
    names = names_in(node)
    if names & counters:
        return True
    attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return any(n in _COUNTER_WHOLE_NAMES or tokens(n) & COUNTER_TOKENS for n in names | attrs)


FIRST_STEPS = 16  # ``if batch_i < 3:`` (plots or prints of the first few batches) holds on a handful of steps, then never


def _is_first_steps(test: ast.Compare, counters: set[str]) -> bool:
    """``batch_i < 3``, ``i <= 2``: this loop's own counter under a small literal bound (not ``epoch < 3``
    inside the step loop, which holds on every step of the first epochs)."""
    if not isinstance(test.ops[0], (ast.Lt, ast.LtE)):
        return False
    bound = test.comparators[0]
    return (isinstance(test.left, ast.Name) and test.left.id in counters and isinstance(bound, ast.Constant)
            and type(bound.value) is int and bound.value <= FIRST_STEPS)


def _is_rare_compare(test: ast.Compare, counters: set[str]) -> bool:
    if len(test.ops) == 1 and _is_first_steps(test, counters):
        return True
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.In)):
        return False
    operands = [test.left, *test.comparators]
    if any(isinstance(o, ast.Constant) and (o.value is None or isinstance(o.value, str)) for o in operands):
        return False
    modulos = [o for o in operands if isinstance(o, ast.BinOp) and isinstance(o.op, ast.Mod)]
    if modulos:
        return any(_is_modulo(o) for o in modulos)  # `step % 1 == 0` holds every step
    return any(_is_counter_expr(o, counters) for o in operands)


def is_flag_name(name: str) -> bool:
    return bool(tokens(name) & FLAG_TOKENS)


def is_rare_guard(test: ast.AST, counters: set[str]) -> bool:
    """Whether an ``if`` test is true only on some steps (logging, last batch, eval every N, the first
    few batches: ``batch_i < 3``).

    ``a and b`` is rare when either part is; ``a or b`` only when both are.
    ``step % 1 == 0``, ``step % n != 0`` and rank checks (``rank == 0``,
    ``is_main_process``) are true on (almost) every step of the process.
    """
    if isinstance(test, ast.BoolOp):
        parts = [is_rare_guard(value, counters) for value in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_modulo(test.operand)  # `not step % 10`
    if isinstance(test, ast.Compare):
        return _is_rare_compare(test, counters)
    if isinstance(test, (ast.Name, ast.Attribute)):
        return is_flag_name(last_name(test))
    if isinstance(test, ast.Call) and isinstance(test.func, (ast.Name, ast.Attribute)):
        return is_flag_name(last_name(test.func))
    return False


def is_bounded_guard(stmt: ast.If) -> bool:
    """``if shown < 5: ...; shown += 1``: a guard that holds a fixed number of times, then never.

    The test (or one ``and`` operand of it) is ``name < N`` / ``name <= N`` and the
    guarded body increments ``name``.
    """
    tests = stmt.test.values if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And) else [stmt.test]
    bounded = {
        last_name(t.left)
        for t in tests
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Lt, ast.LtE))
    }
    return bool(bounded - {""}) and bool(bounded & incremented_counters(stmt.body))
