"""Facts one project file hands another once the per-step call graph is solved.

Each is computed from the files' first, syntax-only contexts and returned; the project
model gives them to the contexts it builds for the rules (:mod:`.program`).

* which parameters of a callee receive step data at a per-step call site;
* CUDA reach: a file imported (directly or through project files) by a file that
  uses CUDA runs on it;
* loaders handed to another file's function whose step loop iterates them, and
  whether a file's training loop lives in another file (``train_one_epoch(...)``).
"""

from __future__ import annotations

import ast
import bisect
from typing import Callable

from .call_graph import CallGraph, FunctionRef, owner_class
from .kept_loaders import class_read, keeper
from ..hotloops.finder import HotEntry, HotLoops, HotRegion
from ..hotloops.loop_kinds import loop_facts
from .modules import FunctionNode, ModuleTable, ProjectModule
from ..project_view import LoaderRead, ReturnedLoader
from ..hotloops.step_loops import ends_first_pass
from ..hotloops.step_markers import LOOP_NODES, is_backward_call, is_optimizer_step, is_shape_read, names_in, own_nodes, unwrap_iterable
from ..syntax import bound_name, parameter_names, positional_parameters

_HOST_READS = frozenset({"item", "tolist", "float", "int", "bool"})


def _is_host_value(graph: CallGraph, module: ProjectModule, expr: ast.AST, at: ast.AST) -> bool:
    """A Python number read from the device (``loss.item()``, ``float(acc)``), directly or
    through a name assigned from one: no step tensor is passed on."""
    if isinstance(expr, ast.Name):
        value = graph.assigned(module, expr.id, at)
        if value is None:
            return False
        expr = value
    if not isinstance(expr, ast.Call):
        return False
    name = expr.func.attr if isinstance(expr.func, ast.Attribute) else getattr(expr.func, "id", None)
    return name in _HOST_READS


def step_data_params(graph: CallGraph, module: ProjectModule, call: ast.Call, region: HotRegion, func: FunctionNode) -> set[str]:
    """The callee's parameters that receive step data (batch-derived values that are not shapes or
    host numbers) at this call; a ``*args`` parameter when a positional argument past the named ones does, a
    ``**kwargs`` one when a keyword or ``**dict`` does."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args] if a.arg not in ("self", "cls")]
    keyword_params = set(params) | {a.arg for a in func.args.kwonlyargs}
    spread = func.args.kwarg.arg if func.args.kwarg is not None else None

    def carries(arg: ast.AST) -> bool:
        return bool(names_in(arg) & region.batch_names) and not is_shape_read(arg) and not _is_host_value(graph, module, arg, call)

    batch = {p for p, arg in positional_parameters(func.args, call) if carries(arg)}  # (``*inputs`` too)
    for keyword in call.keywords:
        if not carries(keyword.value):
            continue
        if keyword.arg in keyword_params:
            batch.add(keyword.arg)  # type: ignore[arg-type]
        elif spread is not None:
            batch.add(spread)
    return batch


def device_functions(module: ProjectModule) -> dict[str, FunctionNode]:
    """Top-level functions of a CUDA file that hand out the device (``def dev(): if
    th.cuda.is_available(): return th.device("cuda") ...``), or set it on an object they are given
    (``def default_setup(args): ... args.device = "cuda"``): a call of one is a use of CUDA."""
    assert module.ctx is not None
    found = {}
    for name, func in module.functions.items():
        if "cuda" not in module.ctx.segment(func):
            continue
        returns = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
        returns = [b for v in returns for b in ([v.body, v.orelse] if isinstance(v, ast.IfExp) else [v])]  # ``cuda if ok else cpu``
        gives_device = any(
            isinstance(v, ast.Call) and bound_name(v.func) == "device"
            or isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith("cuda")
            for v in returns
        ) or _sets_device_on_parameter(func)
        if gives_device:
            found[name] = func
    return found


def _sets_device_on_parameter(func: FunctionNode) -> bool:
    """``args.device = "cuda"`` (or ``= torch.device("cuda:0")``) on one of the function's parameters."""
    params = parameter_names(func.args)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "device" and isinstance(t.value, ast.Name) and t.value.id in params
            for t in node.targets
        ):
            if any(isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.startswith("cuda") for c in ast.walk(node.value)):
                return True
    return False


def device_variables(module: ProjectModule) -> dict[str, int]:
    """Top-level names a CUDA file sets to the device (``device = torch.device("cuda:0" if
    torch.cuda.is_available() else "cpu")``), with their lines."""
    assert module.ctx is not None
    found = {}
    for node in module.ctx.tree.body:
        if isinstance(node, ast.Assign) and "cuda" in module.ctx.segment(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name) and "dev" in target.id.lower():
                    found[target.id] = node.lineno
    return found


_STAR_DEPTH = 3  # ``from data import *`` where data.py has ``from conf import *``: followed this deep


def _imported_device(table: ModuleTable, module: ProjectModule) -> str | None:
    """A file that imports a CUDA file's device variable (by name, or with ``from conf import *``) and uses
    it (``.to(device)``): it runs on that device.  Its place (``"conf.py:9"``), or None."""
    assert module.ctx is not None
    offered: dict[str, str] = {}
    for local, (source, attr) in module.imports.items():
        owner = table.find_module(source, module) if attr is not None else None
        cuda = owner is not None and owner.ctx is not None and owner.ctx.mentions_cuda
        line = device_variables(owner).get(attr) if cuda else None  # type: ignore[arg-type]
        if line is not None:
            offered[local] = f"{owner.label}:{line}"  # type: ignore[union-attr]
    sources, seen = list(module.star_imports), {module}
    for _ in range(_STAR_DEPTH):
        following: list[str] = []
        for source in sources:
            owner = table.find_module(source, module)
            if owner is None or owner in seen or owner.ctx is None:
                continue
            seen.add(owner)
            if owner.ctx.mentions_cuda:
                for name, line in device_variables(owner).items():
                    offered.setdefault(name, f"{owner.label}:{line}")
            following.extend(owner.star_imports)
        sources = following
    if not offered:
        return None
    for node in module.ctx.nodes_of(ast.Name):
        if node.id in offered and isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            return offered[node.id]  # type: ignore[attr-defined]
    return None


def _cuda_base_class(table: ModuleTable, module: ProjectModule) -> str | None:
    """``class Exp_Main(Exp_Basic)`` where the project's ``Exp_Basic`` lives in a file that uses CUDA
    (``self.device = torch.device("cuda:0")`` in its ``__init__``): the subclass runs on its device.
    Its place (``"exp/exp_basic.py:6"``), or None."""
    assert module.ctx is not None
    for cls in module.ctx.nodes_of(ast.ClassDef):
        for base in cls.bases:  # type: ignore[attr-defined]
            target = table.resolve_dotted(module, base)
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef) and target[0] is not module \
                    and target[0].ctx is not None and target[0].ctx.mentions_cuda and "device" in ast.unparse(target[1]):
                return f"{target[0].label}:{target[1].lineno}"
    return None


def cuda_reach(table: ModuleTable) -> tuple[dict[ProjectModule, str], dict[ProjectModule, str]]:
    """(device calls, CUDA reach): the files that call a project device function of a CUDA file
    (``x.to(dist_util.dev())``), or subclass a project class of a CUDA file that keeps a device, so
    use CUDA themselves, with that call's target or base class (``"dist_util.py:45"``); and every
    other file imported (directly or through project files) by a file that uses CUDA, so running on
    it, with that file's path."""
    live = [m for m in table.by_path.values() if m.ctx is not None and not m.is_test]
    providers = {m: device_functions(m) for m in live if m.ctx.mentions_cuda}  # type: ignore[union-attr]
    providers = {m: functions for m, functions in providers.items() if functions}
    device_calls: dict[ProjectModule, str] = {}
    for module in live:
        assert module.ctx is not None
        if module.ctx.mentions_cuda:
            continue
        for call in module.ctx.nodes_of(ast.Call) if providers else ():
            target = table.resolve_function(module, call.func)  # type: ignore[attr-defined]
            if target is not None and target[1] in providers.get(target[0], {}).values():
                device_calls[module] = f"{target[0].label}:{target[1].lineno}"
                break
        else:
            base = _cuda_base_class(table, module) or _imported_device(table, module)
            if base is not None:
                device_calls[module] = base

    def uses_cuda(module: ProjectModule) -> bool:
        return module.ctx.mentions_cuda or module in device_calls  # type: ignore[union-attr]

    queue = [m for m in live if uses_cuda(m)]
    origin = {m: m.path for m in queue}
    while queue:
        module = queue.pop(0)
        for target in table.imported(module):
            if target not in origin:
                origin[target] = origin[module]
                queue.append(target)
    reach = {module: source for module, source in origin.items() if module.ctx is not None and not uses_cuda(module)}
    return device_calls, reach


def cuda_by_calls(table: ModuleTable, entries: dict[ProjectModule, dict[FunctionNode, HotEntry]], device_calls: dict[ProjectModule, str],
                  reach: dict[ProjectModule, str]) -> dict[ProjectModule, str]:
    """Files that no CUDA file imports but whose functions a CUDA file's step loop calls every step (a model
    module chosen by name, ``importlib.import_module(args.model)``, and the helpers it calls): they run on
    CUDA too.  Each with the CUDA file the call path starts in."""
    by_label = {m.label: m for m in table.by_path.values()}

    def on_cuda(module: ProjectModule) -> str | None:
        if module.ctx is None:
            return None
        if module.ctx.mentions_cuda or module in device_calls:
            return module.path
        return reach.get(module)

    found: dict[ProjectModule, str] = {}
    for module, known in entries.items():
        if module.ctx is None or on_cuda(module) is not None:
            continue
        for entry in known.values():
            origin = by_label.get(entry.hot_path[0].rsplit(":", 1)[0]) if entry.hot_path else None
            source = on_cuda(origin) if origin is not None else None
            if source is not None:
                found[module] = source
                break
    return found


def loaders_on_cuda(table: ModuleTable, loaders: dict[ProjectModule, tuple[tuple[LoaderRead, ...], str | None]],
                    returned: dict[ProjectModule, tuple[ReturnedLoader, ...]],
                    *on_cuda: dict[ProjectModule, str]) -> dict[ProjectModule, str]:
    """Files not known to use CUDA whose loaders a step loop of a CUDA file reads and copies to the device
    (``solver = Solver(loader)`` in a script that never names the device): their loaders feed CUDA.  Each
    with that file's path.  ``on_cuda``: the other ways a file is known to run on CUDA (device calls, reach,
    callers); ``loaders``: :func:`link_loaders`'s reads; ``returned``: the factories' returned loaders."""
    by_label = {m.label: m for m in table.by_path.values()}

    def cuda_file(where: str) -> ProjectModule | None:
        module = by_label.get(where.rsplit(":", 1)[0])
        if module is None or module.ctx is None:
            return None
        return module if module.ctx.mentions_cuda or any(module in known for known in on_cuda) else None

    found: dict[ProjectModule, str] = {}
    for module in table.by_path.values():
        if module.ctx is None or module.ctx.mentions_cuda or any(module in known for known in on_cuda):
            continue
        reads = [*loaders.get(module, ((), None))[0], *returned.get(module, ())]
        for read in reads:
            source = cuda_file(read.where) if read.moves_to_device else None
            if source is not None:
                found[module] = source.path
                break
    return found


def trains(graph: CallGraph, module: ProjectModule, region: HotRegion, hot: HotLoops) -> bool:
    """Whether a step loop trains: itself, or through a per-step call into another project
    file that runs backward or steps an optimizer (``loss_scaler(loss, optimizer)``); ``hot``:
    the module's hot loops."""
    return region.trains or training_callee(graph, module, region, hot) is not None


def training_callee(graph: CallGraph, module: ProjectModule, region: HotRegion, hot: HotLoops) -> ProjectModule | None:
    """The project file of a function a step loop calls every step that runs backward or steps an optimizer
    (``model.optimize_parameters()``), if any."""
    for call, owner in hot.nodes(ast.Call):
        if owner is not region:
            continue
        for target, func in graph.callees(module, call):
            if any(is_backward_call(n) or is_optimizer_step(n) for n in ast.walk(func)):
                return target
    return None


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _lightning_training_step(region: HotRegion) -> bool:
    """A LightningModule's ``training_step``: Lightning runs its backward and optimizer step."""
    return region.kind == "lightning-step" and getattr(region.node, "name", "") == "training_step"


def _is_training_step(func: FunctionNode) -> bool:
    """Backward and an optimizer's step in the function's own body, outside any loop of its own but one that
    runs once (a retry loop: ``while size: try: loss.backward() except OOM: size //= 2 else: break``)."""
    nodes = list(own_nodes(func.body))
    nodes += [n for loop in nodes if isinstance(loop, LOOP_NODES) and loop.body and ends_first_pass(loop.body[-1])
              for n in own_nodes(loop.body)]
    return any(is_backward_call(n) for n in nodes) and any(is_optimizer_step(n) for n in nodes)


def _training_step_names(graph: CallGraph) -> frozenset[str]:
    """Names of the project's functions that are one training step (``TD3.train``, ``BPRLoss.stageOne``)."""
    names = set()
    for module in graph.table.by_path.values():
        if module.ctx is None or module.is_test or "backward" not in module.ctx.source:
            continue
        lines = sorted(n.lineno for n in module.ctx.nodes_of(ast.Call) if is_backward_call(n))  # a cheap first cut:
        names.update(func.name for funcs in module.ctx.functions.values() for func in funcs  # a function holding none
                     if _holds_a_line(func, lines) and _is_training_step(func))
    return frozenset(names)


def _holds_a_line(node: ast.AST, lines: list[int]) -> bool:
    """Whether one of the sorted ``lines`` lies within ``node``'s lines."""
    at = bisect.bisect_left(lines, node.lineno)  # type: ignore[attr-defined]
    return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]


_LOCAL_DEPTH = 2  # own-file helpers followed from a loop to the other file's training step (``self.learn()`` -> ``update_params``)


def _calls_training(graph: CallGraph, module: ProjectModule, loop: ast.AST, steps: frozenset[str]) -> ProjectModule | None:
    """A call of the loop's own body runs another file's function that is one training step (``steps``:
    their names): backward and an optimizer's step outside any loop of its own (a function with its own
    step loop, ``train_one_epoch``, makes the caller's loop an epoch loop, and its own loop the training loop).
    The call may be made through the file's own helpers (``self.learn()``, a method of the loop's class,
    calling ``update_params(optim, loss)``)."""
    return _reaches_training(graph, module, loop_facts(loop).calls, steps, _LOCAL_DEPTH, set())  # type: ignore[arg-type]


def _reaches_training(graph: CallGraph, module: ProjectModule, calls: list[ast.Call], steps: frozenset[str], depth: int,
                      seen: set[FunctionNode]) -> ProjectModule | None:
    for call in calls:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name in steps:  # resolve only the calls that can reach one
            for target, func in graph.callees(module, call):
                if _is_training_step(func):
                    return target
        if depth and name is not None:
            for helper in _own_helpers(module, call, name):
                if helper not in seen:
                    seen.add(helper)
                    calls_in = [node for node in own_nodes(helper.body) if isinstance(node, ast.Call)]
                    found = _reaches_training(graph, module, calls_in, steps, depth - 1, seen)
                    if found is not None:
                        return found
    return None


def _own_helpers(module: ProjectModule, call: ast.Call, name: str) -> list[FunctionNode]:
    """The file's own functions a call runs: ``helper(...)`` (a module-level function), or ``self.helper(...)``
    (a method of the class the call is made in)."""
    assert module.ctx is not None
    functions = module.ctx.functions.get(name, [])
    if isinstance(call.func, ast.Name):
        return [f for f in functions if isinstance(module.ctx.parents.get(f), ast.Module)]
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
        owner = module.ctx.enclosing_class(call)
        return [f for f in functions if owner is not None and module.ctx.parents.get(f) is owner]
    return []


def loops_training_elsewhere(graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops]) -> dict[ProjectModule, frozenset[int]]:
    """Per file: the lines of its loops that its own code does not make step loops but whose body calls
    another file's function that is one training step (``for step in range(n_steps): ... step_vals =
    algorithm.update(minibatches)``): each pass is a training step, so the loop is a step loop."""
    steps = _training_step_names(graph)
    found: dict[ProjectModule, frozenset[int]] = {}
    for module in graph.table.by_path.values() if steps else ():
        if module.ctx is None or module.is_test:
            continue
        hot = hot_of(module)
        lines = {loop.lineno for loop in module.ctx.nodes_of(_LOOPS)
                 if not any(r.node is loop for r in hot.step_loops) and _calls_training(graph, module, loop, steps) is not None}
        if lines:
            found[module] = frozenset(lines)
    return found


def training_links(
    graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops], trains_via: dict[ProjectModule, str | None],
    elsewhere: dict[ProjectModule, frozenset[int]] | None = None,
) -> dict[ProjectModule, tuple[frozenset[int], frozenset[str], str | None]]:
    """Per file: the lines of its step loops that train only through another file's function
    (``policy.train(replay_buffer)``, ``agent.update(rollouts)``: backward and the optimizer's step
    are there), and the names of its functions that a training file calls (``get_optimizer(cfg,
    model)``: what they build serves training).  ``hot_of``: a file's solved hot loops;
    ``trains_via``: per file, the other file's training loop it calls (:func:`link_loaders`).
    The third item: a file that uses CUDA whose training step such a loop runs (the loop trains on CUDA).
    ``elsewhere``: per file, the lines of the loops :func:`loops_training_elsewhere` made step loops."""
    loops: dict[ProjectModule, frozenset[int]] = {}
    steps_in: dict[ProjectModule, ProjectModule] = {}
    trainers: list[ProjectModule] = []
    steps = _training_step_names(graph)
    for module in graph.table.by_path.values():
        if module.ctx is None or module.is_test:
            continue
        hot = hot_of(module)
        lines: set[int] = set()
        for region in hot.step_loops:  # step loops that train through another file's function
            callee = training_callee(graph, module, region, hot) if not region.trains else None
            if callee is not None:
                lines.add(region.node.lineno)
                if callee.ctx is not None and callee.ctx.mentions_cuda:
                    steps_in.setdefault(module, callee)
        for loop in module.ctx.nodes_of(_LOOPS) if steps else ():  # one its file does not see train: ``policy.train(buffer)``
            forced = elsewhere is not None and loop.lineno in elsewhere.get(module, frozenset())
            if loop.lineno in lines or (not forced and any(r.node is loop for r in hot.step_loops)):
                continue
            owner = _calls_training(graph, module, loop, steps)
            if owner is not None:
                lines.add(loop.lineno)
                if owner.ctx is not None and owner.ctx.mentions_cuda:
                    steps_in.setdefault(module, owner)
        loops[module] = frozenset(lines)
        if lines or trains_via.get(module) or any(region.trains or _lightning_training_step(region) for region in hot.regions):
            trainers.append(module)
    called: dict[ProjectModule, set[str]] = {}
    for module in trainers:
        for call in module.ctx.nodes_of(ast.Call):  # type: ignore[union-attr]
            assert isinstance(call, ast.Call)
            target = graph.table.resolve_function(module, call.func)
            if target is not None and target[0] is not module:
                called.setdefault(target[0], set()).add(target[1].name)
    return {module: (loops.get(module, frozenset()), frozenset(called.get(module, ())),
                     steps_in[module].path if module in steps_in else None)
            for module in graph.table.by_path.values()}


def link_loaders(
    graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops]
) -> dict[ProjectModule, tuple[tuple[LoaderRead, ...], str | None]]:
    """Per file: the loaders it hands to another file's function whose step loop iterates that
    parameter, and the other file's training loop it calls, if any (``hot_of``: a file's solved
    hot loops).  The function may be a method of an object the file made (``solver =
    Solver(...); solver.train()``); its training loop may be in a method of the same class it
    calls (``self._run_one_epoch(epoch)``)."""
    from ..rules._loaders import held_name, moves_data_to_device

    links: dict[ProjectModule, tuple[tuple[LoaderRead, ...], str | None]] = {}
    methods = frozenset(node.name for m in graph.table.by_path.values() for cls in m.classes.values() for node in cls.body
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    classes = frozenset(name for m in graph.table.by_path.values() for name in m.classes)
    for module in graph.table.by_path.values():
        if module.ctx is None:
            continue
        reads: list[LoaderRead] = []
        trains_via: str | None = None
        built = _built_from_project_classes(graph, module)
        for call in module.ctx.nodes_of(ast.Call):
            assert isinstance(call, ast.Call)
            passed = [(i, name) for i, a in enumerate(call.args) if isinstance(a, (ast.Name, ast.Subscript)) and (name := held_name(a))]
            named = [(k.arg, name) for k in call.keywords
                     if k.arg and isinstance(k.value, (ast.Name, ast.Subscript)) and (name := held_name(k.value))]
            if not (passed or named) and trains_via is not None:
                continue
            if (passed or named) and bound_name(call.func) in classes:
                reads.extend(_kept_reads(graph, hot_of, module, call, passed, named))
            for owner, func in _called_functions(graph, module, call, methods, built):
                params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
                if params and params[0] == "self" and isinstance(call.func, ast.Attribute):
                    params = params[1:]  # a bound method: the first argument is the second parameter
                by_param = {params[i]: name for i, name in passed if i < len(params)}
                by_param.update({k: name for k, name in named})
                hot = hot_of(owner)
                inner = _self_called_methods(owner, func)
                for region in hot.step_loops:
                    loop = region.node
                    holder = owner.ctx.enclosing_function(loop) if owner.ctx is not None else None
                    if holder is not func and holder not in inner:
                        continue
                    if trains_via is None and trains(graph, owner, region, hot):
                        trains_via = f"{owner.label}:{loop.lineno}"
                    if holder is not func or not isinstance(loop, (ast.For, ast.AsyncFor)):
                        continue
                    iterated = iterated_name(loop.iter, by_param)
                    if iterated is not None and owner.ctx is not None:
                        moves = moves_data_to_device(owner.ctx, [region], hot)
                        reads.append(LoaderRead(by_param[iterated], call.lineno, call.col_offset, moves, f"{owner.label}:{loop.lineno}"))
        links[module] = (tuple(reads), trains_via)
    return links


def _kept_reads(graph: CallGraph, hot_of: Callable[[ProjectModule], HotLoops], module: ProjectModule, call: ast.Call,
                passed: list[tuple[int, str]], named: list[tuple[str, str]]) -> list[LoaderRead]:
    """The loaders among a constructor call's arguments that the project class keeps and reads in a step
    loop of its own (``Solver(train_loader, config)``, :mod:`.kept_loaders`), each judged on its own; a dict
    handed in is read by the entries ``__init__`` keeps (``data = {'tr_loader': tr_loader}``, ``data['tr_loader']``)."""
    made = keeper(graph, module, call)
    if made is None:
        return []
    reads = []
    by_param = [*((made.params[i], n) for i, n in passed if i < len(made.params)), *named]
    hot = hot_of(made.owner)
    for param, name in by_param:
        attributes = made.attributes({param}, None)
        kept = class_read(made.owner, made.cls, attributes, hot) if attributes else None
        if kept is not None:
            reads.append(LoaderRead(name, call.lineno, call.col_offset, kept.moves_to_device, kept.where, kept.every_epoch))
            continue
        keys = made.keys(param)
        for key, loader in _dict_entries(graph.assigned(module, name, call)) if keys else ():
            kept = class_read(made.owner, made.cls, made.attributes({param}, key), hot) if key in keys else None
            if kept is not None:
                reads.append(LoaderRead(loader, call.lineno, call.col_offset, kept.moves_to_device, kept.where, kept.every_epoch))
    return reads


def _dict_entries(value: ast.AST | None) -> list[tuple[str, str]]:
    """(key, name) of each string-keyed entry of a dict literal that holds a plain name."""
    if not isinstance(value, ast.Dict):
        return []
    return [(key.value, entry.id) for key, entry in zip(value.keys, value.values)
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(entry, ast.Name)]


def _built_from_project_classes(graph: CallGraph, module: ProjectModule) -> frozenset[str]:
    """The names the file assigns an instance of a project class to (``solver = Solver(...)``; ``trainer =
    Trainer(opt, model)`` with ``Trainer = train_factory[opt.task]``, a dict of project classes)."""
    names = set()
    for node in module.ctx.nodes_of(ast.Assign) if module.ctx is not None else ():
        assert isinstance(node, ast.Assign)
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, (ast.Name, ast.Attribute, ast.Subscript)):
            target = graph.table.resolve_dotted(module, node.value.func)
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef) or graph.keyed_classes(module, node.value):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(names)


def _called_functions(graph: CallGraph, module: ProjectModule, call: ast.Call, methods: frozenset[str],
                      built: frozenset[str]) -> list[FunctionRef]:
    """The functions of other project files this call runs: a module function (``train(...)``) or a
    method of an object of a project class the file made (``solver.train()``; ``methods``: the names
    project classes define; ``built``: the names the file assigns their instances to; other calls are
    not resolved at all)."""
    target = graph.table.resolve_function(module, call.func)
    if target is not None:
        owner = target[0]
        return [] if owner is module or owner.ctx is None or owner.is_test else [target]
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in methods and isinstance(func.value, ast.Name) and func.value.id in built):
        return []
    found = []
    for owner, cls in graph.instance_classes(module, func.value.id, call, by_name=False):  # built in this file
        method = graph.table.find_method(owner, cls, func.attr)
        if method is not None and method[0] is not module and method[0].ctx is not None and not method[0].is_test:
            found.append(method)
    return found


def _self_called_methods(module: ProjectModule, func: FunctionNode) -> set[FunctionNode]:
    """The methods of ``func``'s own class that it calls on ``self`` (one level)."""
    if module.ctx is None:
        return set()
    cls = owner_class(module.ctx, func)
    if cls is None:
        return set()
    found: set[FunctionNode] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "self":
            method = module.method(cls, node.func.attr)
            if method is not None and method is not func:
                found.add(method)
    return found


def iterated_name(iterable: ast.expr, wanted: dict[str, str]) -> str | None:
    """The parameter a loop iterates: ``loader``, ``enumerate(tqdm(loader))``, or a wrapper
    taking it first (``metric_logger.log_every(loader, 10, header)``)."""
    name = bound_name(unwrap_iterable(iterable))
    if name in wanted:
        return name
    node: ast.expr = iterable
    for _ in range(4):
        if not (isinstance(node, ast.Call) and node.args):
            return None
        node = node.args[0]
        if isinstance(node, ast.Name) and node.id in wanted:
            return node.id
    return None


def syncing_imports(table: ModuleTable) -> dict[ProjectModule, frozenset[str]]:
    """Per file: the names it imports of other project files' functions whose own body waits for the
    device (``evaluate_network`` summing ``loss.item()``; TT402's own reading of a function,
    ``syncing_functions``), so that a call of one is a sync for TT402's timings
    (``t0 = time.time(); train(...); evaluate_network(...); time.time() - t0``)."""
    from ..rules._tt402_timing import syncing_functions

    waiting: dict[ProjectModule, set[str]] = {}  # file -> its functions that wait
    found: dict[ProjectModule, frozenset[str]] = {}
    for module in table.by_path.values():
        names = set()
        for local, (_, attr) in module.imports.items():
            target = table.symbol(module, local) if attr is not None else None
            if not (isinstance(target, tuple) and isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef))):
                continue
            owner, func = target
            if owner is module or owner.ctx is None:
                continue
            if owner not in waiting:
                waiting[owner] = syncing_functions(owner.ctx)
            if func.name in waiting[owner]:
                names.add(local)
        if names:
            found[module] = frozenset(names)
    return found
