"""Is this expression a device tensor?  A three-valued guess for the host-sync rules.

``True``: almost surely a tensor (batch data, model / criterion outputs, torch
ops, tensor methods, names bound to those).  ``False``: almost surely not
(constants, ``len()``, ``.shape``, ``.item()``, numpy / math results, ``is`` /
``in`` tests, host copies made with ``.cpu()`` / ``.numpy()``, which cost
nothing more to read, and a batch read before the step's next binding copies it
to the device, ``x = x.cuda()`` / ``x, n = to_cuda(x, n)``: still on the host).
``None``: unknown.  Rules fire on ``True`` (``.item()``
also on ``None``), so a wrong ``None`` costs a miss, never a false alarm.

Names resolve flow-approximately: the latest binding in the same scope that
ends before the use, else the latest in the scope (loop-carried), else the
enclosing scopes, else the name itself (``loss``, ``logits``...).  A name
unpacked from a call of a function of the file (``outputs, y = self._predict(x,
y)``) takes that element of the tuples it returns.
"""

from __future__ import annotations

import ast
import re

from ..syntax import assigned_value, bound_name, parameter_defaults
from .base import RuleContext
from ..hotloops.finder import HotRegion
from ._helpers import is_device_move
from ._scopes import COUNTER, Binding, Position, element_source, scope_bindings
from ._tensor_facts import (
    BUILTIN_NON_TENSOR,
    HOST_CONSTANTS,
    MODEL_CALLEE,
    NEVER_TENSOR_NAME,
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    NON_TENSOR_MODULES,
    ORDERING,
    TENSOR_API,
    TENSOR_ATTRS,
    TENSOR_NAME,
    TENSOR_RESULT_METHODS,
    assigns_none,
    builds_on_host,
    is_step_parameter,
    iterates_structure,
    model_names,
    own_nodes_of,
    registered_tensors,
    torch_function_result,
)

_MAX_DEPTH = 12
MOVER_NAME = re.compile(r"^(to_|move_to_|batch_to_|send_to_)?(cuda|gpu|device)$")  # a helper that moves its arguments
HOST_COPY_HOPS = 4  # names followed back to a host copy (``flow = f.cpu()``; ``epe = (flow - gt).sum()``; ``epe = epe.view(-1)``)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)


def oracle(ctx: RuleContext) -> "TensorOracle":
    """The module's oracle, shared by the rules of one analysis run."""
    key = ("tensor-oracle",)
    found = ctx.memo.get(key)
    if not isinstance(found, TensorOracle):
        found = ctx.memo[key] = TensorOracle(ctx)
    return found


_VIEWS = frozenset({"detach", "float", "double", "half", "contiguous", "flatten", "squeeze"})


class TensorOracle:
    """Tensor-ness of expressions in one module."""

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self._bindings: dict[ast.AST, dict[str, list[Binding]]] = {}
        self._results: dict[ast.AST, bool | None] = {}  # function -> what its calls return
        self._host_parameters: dict[tuple[ast.AST, str], bool] = {}  # (method, parameter) -> host at every call
        self._model_names: frozenset[str] | None = None
        self._calls_on_self: dict[str, list[ast.Call]] | None = None  # see _self_calls
        self.buffers = registered_tensors(ctx)
        # ``torch.zeros(n)`` without ``device=`` is made on the host beside the GPU work, unless the file moves the
        # default device (in a CPU-only file every tensor is on the host, and the value reads are reported as the
        # rules say: as they would cost once the run moves to a GPU)
        self.factories_on_host = ctx.uses_cuda and "set_default_device" not in ctx.source \
            and "set_default_tensor_type" not in ctx.source

    @property
    def model_names(self) -> frozenset[str]:
        """Names the file treats as a model whatever they are called (``retinanet``): their ``.parameters()`` go to an
        optimizer or a clipper, or they are wrapped in ``DataParallel`` / ``DistributedDataParallel``."""
        if self._model_names is None:
            self._model_names = frozenset(model_names(self.ctx))
        return self._model_names

    def is_tensor(self, node: ast.AST, region: HotRegion | None = None, strict: bool = False) -> bool | None:
        """True / False / None (unknown) for an expression.

        ``strict``: a bare name must be bound to a tensor in its scope; its
        spelling alone (``outputs``, ``loss``) is not enough.
        """
        if strict and isinstance(node, ast.Name):
            return self._eval_name(
                node.id, (node.lineno, node.col_offset), self._scope_of(node), region, 1, by_spelling=False
            )
        return self._eval(node, region, 0)

    def sync_kind(self, node: ast.AST, region: HotRegion | None) -> str | None:
        """The device->host read a call forces: ``item``, ``tolist``, ``cpu``, ``numpy``, ``float``...

        ``.cpu()`` / ``.numpy()`` / ``.to("cpu")`` only count in files that use
        CUDA (on the CPU they are free); ``.item()`` counts unless the receiver
        is known not to be a tensor.
        """
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and not node.args and not node.keywords:
            verdict = self._eval(func.value, region, 0)
            if func.attr == "item" and verdict is not False:
                return "item"
            if func.attr == "tolist" and verdict is True:
                return "tolist"
            if func.attr in ("cpu", "numpy") and verdict is True and self.ctx.uses_cuda:
                return func.attr
            if func.attr == "cpu" and verdict is None and self.ctx.uses_cuda and self._read_out(node) \
                    and self._made_from_tensor(func.value, node, region):
                return "cpu"  # ``all_gather(rewards, rank).cpu().numpy()``: a helper's result from a step tensor
        if isinstance(func, ast.Attribute) and func.attr == "to" and len(node.args) == 1 and not node.keywords:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and arg.value == "cpu" and self.ctx.uses_cuda:
                return "cpu" if self._eval(func.value, region, 0) is True else None
        if isinstance(func, ast.Name) and func.id in ("float", "int", "bool") and len(node.args) == 1:
            if func.id not in self.ctx.aliases and self._eval(node.args[0], region, 0) is True:
                return func.id
        return None

    def _read_out(self, call: ast.Call) -> bool:
        """``x.cpu().numpy()`` / ``x.cpu().tolist()``: read out to host values, a chain only a tensor answers."""
        parent = self.ctx.parents.get(call)
        return (isinstance(parent, ast.Attribute) and parent.attr in ("numpy", "tolist")
                and isinstance(self.ctx.parents.get(parent), ast.Call))

    def _made_from_tensor(self, value: ast.expr, at: ast.AST, region: HotRegion | None) -> bool:
        """The value is (a name last set in its function to) the result of a call the oracle cannot follow that is
        handed a tensor it can (``rewards = all_gather_if_needed(rewards, rank, world_size)``)."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS \
                and not value.args:
            value = value.func.value  # ``.detach()``, ``.float()``
        if isinstance(value, ast.Name):
            scope = self.ctx.enclosing_function(at) or self.ctx.tree
            value = assigned_value(scope, value.id)  # type: ignore[assignment]
        if not (isinstance(value, ast.Call) and value.args) or (self.ctx.qualname(value.func) or "").startswith("torch."):
            return False
        return self._eval(value, region, 0) is None and any(self._eval(arg, region, 0) is True for arg in value.args)

    # --- expressions ------------------------------------------------------------

    def _eval(self, node: ast.AST, region: HotRegion | None, depth: int) -> bool | None:
        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(node, HOST_CONSTANTS):
            return False
        if isinstance(node, ast.DictComp):
            return self._eval_dict_comprehension(node, region, depth)
        if isinstance(node, ast.Name):
            return self._eval_name(node.id, (node.lineno, node.col_offset), self._scope_of(node), region, depth)
        if isinstance(node, ast.Attribute):
            if node.attr in NON_TENSOR_ATTRS:
                return False
            if isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in self.buffers:
                return True  # ``self.queue_ptr`` after ``self.register_buffer("queue_ptr", ...)``
            if not (TENSOR_ATTRS.match(node.attr) or self._is_batch_container(node.value, region)):
                return None  # module.affine, cfg.flag, batch_stats.count
            return True if self._eval(node.value, region, depth) is True else None
        if isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr)):
            return self._eval(node.value, region, depth)
        if isinstance(node, ast.Call):
            return self._eval_call(node, region, depth)
        if isinstance(node, ast.BinOp):
            if isinstance(node.left, (ast.JoinedStr, ast.Constant)) and isinstance(getattr(node.left, "value", ""), str):
                return False  # "%s" % x, "a" + b
            return self._any_true([node.left, node.right], region, depth)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return False  # a Python bool (the sync, if any, happens inside)
            return self._eval(node.operand, region, depth)
        if isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return False
            return self._any_true([node.left, *node.comparators], region, depth)
        if isinstance(node, ast.IfExp):
            body, orelse = self._eval(node.body, region, depth), self._eval(node.orelse, region, depth)
            return body if body == orelse else None
        return None

    def _is_batch_container(self, node: ast.AST, region: HotRegion | None) -> bool:
        """The step loop's own batch object (``batch.x``, ``batch.label`` are its tensors)."""
        if region is None or not isinstance(node, ast.Name) or node.id not in region.batch_names:
            return False
        loop = region.node
        return isinstance(loop, (ast.For, ast.AsyncFor)) and any(
            isinstance(n, ast.Name) and n.id == node.id for n in ast.walk(loop.target)
        )

    def _any_true(self, nodes: list[ast.AST], region: HotRegion | None, depth: int) -> bool | None:
        verdicts = [self._eval(n, region, depth) for n in nodes]
        if any(v is True for v in verdicts):
            return True
        return False if all(v is False for v in verdicts) else None

    def _eval_dict_comprehension(self, node: ast.DictComp, region: HotRegion | None, depth: int) -> bool | None:
        """``{k: v.to(d) for k, v in batch.items()}`` holds tensors: its subscripts are tensors."""
        for generator in node.generators:
            source = generator.iter
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
                source = source.func.value
            if self._eval(source, region, depth) is True:
                return True
        return None

    def _eval_call(self, node: ast.Call, region: HotRegion | None, depth: int) -> bool | None:
        func = node.func
        qualname = self.ctx.qualname(func) or ""
        if qualname.startswith("torch."):
            if self.factories_on_host and builds_on_host(node, qualname):
                return False  # a host tensor beside the GPU work: reading it waits for nothing
            if self._host_made(node, 0):
                return False  # ``torch.sum(a.cpu() > b)``: computed from the host copy, which the ``.cpu()`` waited for
            return torch_function_result(qualname)
        if qualname.startswith(NON_TENSOR_MODULES) or qualname in ("numpy", "math"):
            return False
        if isinstance(func, ast.Name):
            if func.id in BUILTIN_NON_TENSOR and func.id not in self.ctx.aliases:
                return False
            if func.id == "abs" and node.args:
                return self._eval(node.args[0], region, depth)
            if func.id == "sum" and node.args and self._eval_elements(node.args[0], region, depth + 1) is True:
                return True  # ``sum(p.grad.norm() for p in params)``: a tensor when its terms are
            if func.id == "self" and node.args:
                return True  # self(x) in a LightningModule is its forward
            if (MODEL_CALLEE.match(func.id) or func.id in self.model_names) and (node.args or node.keywords):
                return True
            return self._returns_of(self.ctx.functions.get(func.id, ()), depth)
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr in NON_TENSOR_METHODS:
            return False
        if func.attr in TENSOR_RESULT_METHODS:
            return True
        if func.attr == "to" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu":
            return False
        if is_device_move(node, self.ctx) and isinstance(func.value, ast.Call) \
                and builds_on_host(func.value, self.ctx.qualname(func.value.func) or ""):
            return True  # ``torch.Tensor([w, h]).to(device)``: a host tensor moved to the device
        if func.attr not in ("cuda", "to") and self._host_made(func.value, 0):
            return False  # ``x.cpu().sum()``: computed on the host copy, which the ``.cpu()`` waited for
        if func.attr in TENSOR_API:
            receiver = self._eval(func.value, region, depth)
            if receiver is True:
                return True  # (a method no tensor has, ``f.is_file()``, says the receiver was no tensor after all)
            if receiver is False and func.attr not in ("cuda", "to"):
                return False  # ``lengths.max()`` of a host tensor (a batch not yet moved, a factory's): on the host too
        if MODEL_CALLEE.match(func.attr) and (node.args or node.keywords):
            return True  # self.model(x), self.criterion(out, y)
        if isinstance(func.value, ast.Name) and func.value.id == "self" and func.attr == "forward":
            return True
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return self._returns_of(self.ctx.functions.get(func.attr, ()), depth)
        return None

    def _host_made(self, node: ast.AST, hops: int) -> bool:
        """A value already copied to the host: ``x.cpu()``, ``x.numpy()``, ``x.to("cpu")``, a method or an
        index of one (``x.cpu().sum()``, ``x.cpu()[0]``), arithmetic or a comparison with one (``x.cpu() - y``,
        ``x.cpu() > 3``: torch refuses to mix a host tensor with a device one, so the result is on the host; only
        a 0-d host tensor may meet a device one, which a copied batch or output seldom is), a torch function of
        one (``torch.sum(x.cpu() ** 2, dim=0)``, without ``device=``), or a name last bound to one (four names deep)."""
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.UnaryOp):
                node = node.operand
            elif isinstance(node, (ast.BinOp, ast.Compare)):
                operands = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.left, *node.comparators]
                return any(self._host_made(o, hops) for o in operands)
            elif self.factories_on_host and isinstance(node, ast.Call) and builds_on_host(node, self.ctx.qualname(node.func) or ""):
                return True
            elif isinstance(node, ast.Call) and node.args and not any(k.arg == "device" for k in node.keywords) \
                    and (self.ctx.qualname(node.func) or "").rpartition(".")[0] == "torch":
                first = node.args[0]
                elements = first.elts if isinstance(first, (ast.List, ast.Tuple)) else [first]  # torch.cat([a, b])
                return any(self._host_made(e, hops) for e in elements)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr in ("cpu", "numpy"):
                    return True
                if attr == "to" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu":
                    return True
                if attr in ("cuda", "to"):
                    return False
                node = node.func.value
            elif isinstance(node, ast.Name) and hops < HOST_COPY_HOPS:
                use = (node.lineno, node.col_offset)
                candidates = [c for c in self._bindings_in(self._scope_of(node)).get(node.id, []) if c[2] <= use
                              and not isinstance(c[1], ast.Subscript)]  # ``mask[x == pad] = 0`` writes in place
                if not candidates:
                    return False
                statement, target = candidates[-1][0], candidates[-1][1]
                value = getattr(statement, "value", None)
                if not isinstance(statement, ast.Assign) or not isinstance(target, ast.Name) or value is None:
                    return False
                return self._host_made(value, hops + 1)
            else:
                return False

    def _returns_of(self, functions: "list[ast.FunctionDef | ast.AsyncFunctionDef] | tuple", depth: int) -> bool | None:
        """A call of a function of this file (``convert_to_xywh(boxes)``, ``self.sample_schedule(n)``)
        returns a tensor when every ``return`` of the one function of that name gives a torch result."""
        if len(functions) != 1:
            return None
        func = functions[0]
        known = self._results.get(func)
        if known is not None or func in self._results:
            return known
        self._results[func] = None  # (recursion guard)
        returns = [n.value for n in own_nodes_of(func) if isinstance(n, ast.Return) and n.value is not None]
        verdict = True if returns and all(self._eval(v, None, depth) is True for v in returns) else None
        self._results[func] = verdict
        return verdict

    # --- names --------------------------------------------------------------------

    def _eval_name(
        self, name: str, use: Position, scope: ast.AST, region: HotRegion | None, depth: int,
        by_spelling: bool = True,
    ) -> bool | None:
        if NEVER_TENSOR_NAME.match(name) and not is_step_parameter(name, scope, region):
            return None
        current: ast.AST | None = scope
        innermost = True
        while current is not None:
            candidates = self._bindings_in(current).get(name)
            if candidates and any(_declared_scalar(c[0]) for c in candidates):
                return False  # ``ref_size: int`` then ``ref_size = ...``: the code says it holds a Python number
            if candidates:
                chosen = candidates[-1]
                if innermost:
                    before = [c for c in candidates if c[2] <= use]
                    chosen = before[-1] if before else candidates[-1]
                    if len(before) > 1 and assigns_none(chosen) and self._other_branches(before[-2][0], chosen[0]):
                        chosen = before[-2]  # ``x = t.mean() if ... else: x = None``: a tensor, when set
                    if before and self._moved_after(name, use, chosen, candidates):
                        return False  # read before the step moves it to the device (``x = x.cuda()`` below): on the host
                return self._eval_binding(name, chosen, current, region, depth)
            innermost = False
            current = None if isinstance(current, ast.Module) else self._scope_of(current)
        if region is not None and name in region.batch_names:
            return True
        return True if by_spelling and TENSOR_NAME.match(name) else None

    def _eval_binding(
        self, name: str, binding: Binding, scope: ast.AST, region: HotRegion | None, depth: int
    ) -> bool | None:
        statement, target, _ = binding
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return self._eval_loop_target(name, statement, region, depth)
        if isinstance(statement, ast.arg):
            return self._eval_parameter(statement, scope, region)
        if isinstance(statement, ast.AugAssign):
            value = self._eval(statement.value, region, depth)
            if value is True:
                return True
            previous = self._eval_name(name, (statement.lineno, statement.col_offset), scope, region, depth + 1)
            return previous if value is False else (True if previous is True else None)
        value = getattr(statement, "value", None)
        if value is None:
            return None
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for element, source in zip(target.elts, value.elts):
                if isinstance(element, ast.Name) and element.id == name:
                    return self._eval(source, region, depth)
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
            unpacked = self._unpacked_return(target, name, value, depth)
            if unpacked is not None:
                return unpacked
        verdict = self._eval(value, region, depth)
        if not isinstance(target, ast.Name) and verdict is False:
            return None  # unpacking a tuple from a helper tells us nothing
        return verdict

    def _moved_after(self, name: str, use: Position, chosen: Binding, candidates: list[Binding]) -> bool:
        """The value ``name`` holds at ``use`` (bound by ``chosen``) is copied to the device by the next statement that
        binds the name (``x = x.cuda()`` further down the step; not a move after another binding in between)."""
        if self._moves(chosen, name):
            return False
        later = [c for c in candidates if (getattr(c[0], "lineno", 0), getattr(c[0], "col_offset", 0)) > use]
        return bool(later) and self._moves(later[0], name)

    def _rooted_before_move(self, node: ast.AST) -> bool:
        """``lengths.max()``, ``x[0].sum()``: tensor methods and indexing down to a name read before its move."""
        while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Attribute) or node.func.attr not in TENSOR_API or node.func.attr in ("cuda", "to"):
                    return False
                node = node.func.value
            else:
                node = node.value
        if not isinstance(node, ast.Name):
            return False
        use = (node.lineno, node.col_offset)
        candidates = self._bindings_in(self._scope_of(node)).get(node.id, [])
        before = [c for c in candidates if c[2] <= use]
        return bool(before) and self._moved_after(node.id, use, before[-1], candidates)

    def _moves(self, binding: Binding, name: str) -> bool:
        """The binding copies ``name`` itself to the device: ``x = x.cuda()``, ``x = x.to(device)``, ``x, n = x.cuda(),
        n.cuda()``, or ``x, n = to_cuda(x, n)`` (a helper named for the move: ``to_cuda``, ``batch_to_gpu``, ``to_device``)."""
        statement, target, _ = binding
        value = getattr(statement, "value", None)
        if not isinstance(statement, ast.Assign) or value is None:
            return False
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = [(t, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name) and t.id == name]
            return len(pairs) == 1 and self._moves_itself(pairs[0][1], name)
        if isinstance(target, ast.Name):
            return self._moves_itself(value, name)
        if not (isinstance(target, ast.Tuple) and isinstance(value, ast.Call)):
            return False
        return bool(MOVER_NAME.match(bound_name(value.func) or "")) and any(isinstance(a, ast.Name) and a.id == name for a in value.args)

    def _moves_itself(self, value: ast.AST, name: str) -> bool:
        """``name.cuda()``, ``name.to(device)``."""
        return isinstance(value, ast.Call) and is_device_move(value, self.ctx) and isinstance(value.func, ast.Attribute) \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == name

    def _unpacked_return(self, target: ast.Tuple, name: str, call: ast.Call, depth: int) -> bool | None:
        """``outputs, y = self._predict(x, y)``: the element ``name`` takes of a tuple that the one function of
        this file so named returns (``return outputs, batch_y``), a tensor when it is one in every ``return``."""
        func = call.func
        if isinstance(func, ast.Name) and func.id not in self.ctx.aliases:
            functions = self.ctx.functions.get(func.id, ())
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            functions = self.ctx.functions.get(func.attr, ())
        else:
            return None
        index = next((i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name), None)
        if len(functions) != 1 or index is None or any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        returns = [n.value for n in own_nodes_of(functions[0]) if isinstance(n, ast.Return) and n.value is not None]
        if not returns or not all(isinstance(r, ast.Tuple) and len(r.elts) == len(target.elts) for r in returns):
            return None
        return True if all(self._eval(r.elts[index], None, depth + 1) is True for r in returns) else None  # type: ignore[attr-defined]

    def _eval_parameter(self, arg: ast.arg, scope: ast.AST, region: HotRegion | None) -> bool | None:
        """A parameter is a tensor when annotated so, or when the step passes it batch data; on the host when
        every call of the function in this file passes a batch the caller moves to the device afterwards."""
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.ctx.enclosing_class(scope) is not None \
                and self._host_at_every_call(scope, arg):
            return False
        if arg.annotation is not None:
            return True if "Tensor" in ast.unparse(arg.annotation) else None
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            default = parameter_defaults(scope.args).get(arg)
            if isinstance(default, ast.Constant) and default.value is not None:
                return None  # end_dim=-1, verbose=False
        return True if region is not None and arg.arg in region.batch_names else None

    def _host_at_every_call(self, method: ast.FunctionDef | ast.AsyncFunctionDef, arg: ast.arg) -> bool:
        """``x, y = self.mask_out(x, lengths)`` then ``x, y = to_cuda(x, y)``: each ``self.method(...)`` call of the file
        hands ``arg`` a value read before its move (``lengths.max()`` inside ``mask_out`` runs on the host)."""
        key = (method, arg.arg)
        known = self._host_parameters.get(key)
        if known is not None:
            return known
        self._host_parameters[key] = False  # (recursion guard)
        positional = [a.arg for a in (*method.args.posonlyargs, *method.args.args)][1:]  # after ``self``
        calls = self._self_calls().get(method.name, [])
        passed = []
        for call in calls:
            value = next((k.value for k in call.keywords if k.arg == arg.arg), None)  # type: ignore[attr-defined]
            if value is None and arg.arg in positional and positional.index(arg.arg) < len(call.args):  # type: ignore[attr-defined]
                value = call.args[positional.index(arg.arg)]  # type: ignore[attr-defined]
            if value is None or isinstance(value, ast.Starred):
                break
            passed.append(value)
        verdict = bool(calls) and len(passed) == len(calls) and all(self._rooted_before_move(v) for v in passed)
        self._host_parameters[key] = verdict
        return verdict

    def _self_calls(self) -> dict[str, list[ast.Call]]:
        """The file's ``self.m(...)`` calls by method name, collected once."""
        if self._calls_on_self is None:
            self._calls_on_self = {}
            for call in self.ctx.nodes_of(ast.Call):
                func = call.func  # type: ignore[attr-defined]
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                    self._calls_on_self.setdefault(func.attr, []).append(call)  # type: ignore[arg-type]
        return self._calls_on_self

    def _eval_loop_target(
        self, name: str, loop: ast.For | ast.AsyncFor, region: HotRegion | None, depth: int
    ) -> bool | None:
        source = element_source(self.ctx, loop.target, name, loop.iter)
        if source is COUNTER:
            return False
        if source is not None and self._values_of_step_data(loop, name, source, region, depth):
            return True
        if source is not None and iterates_structure(source):
            return None  # (name, module) pairs, parameters, param groups, dict entries
        if source is not None:
            verdict = self._eval_elements(source, region, depth)
            if verdict is not None:
                return verdict
        if region is not None and loop is region.node:
            return True if name in region.batch_names else None
        return None

    def _values_of_step_data(
        self, loop: ast.For | ast.AsyncFor, name: str, source: ast.AST, region: HotRegion | None, depth: int
    ) -> bool:
        """``for k, v in outputs.items()`` / ``for v in preds.values()`` over step data (a dict of
        tensors a per-step call handed over): the values are tensors too, or hold them."""
        if region is None or not isinstance(source, ast.Call) or not isinstance(source.func, ast.Attribute):
            return False
        method, owner = source.func.attr, source.func.value
        if method == "items":
            target = loop.target
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                return False
            if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target.elts[1])):
                return False  # the key
        elif method != "values":
            return False
        return isinstance(owner, ast.Name) and owner.id in region.batch_names and self._eval(owner, region, depth) is True

    def _eval_elements(self, iterable: ast.AST, region: HotRegion | None, depth: int) -> bool | None:
        """What iterating ``iterable`` yields: host values, tensors, or unknown."""
        if depth > _MAX_DEPTH:
            return None
        if iterates_structure(iterable):
            return None
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr == "tolist":
            return False  # Python numbers (the sync, if any, was paid once, there)
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id not in self.ctx.aliases:
            if iterable.func.id in ORDERING and len(iterable.args) == 1:
                return self._eval_elements(iterable.args[0], region, depth + 1)  # list(...), reversed(...)
            if iterable.func.id == "zip" and iterable.args:  # rows of host values when every column is
                columns = [self._eval_elements(a, region, depth + 1) for a in iterable.args]
                return False if all(c is False for c in columns) else None
        if isinstance(iterable, ast.Subscript) and isinstance(iterable.slice, ast.Slice):
            return self._eval_elements(iterable.value, region, depth + 1)  # names[::-1]
        if isinstance(iterable, ast.BinOp) and isinstance(iterable.op, (ast.Add, ast.Mult)):
            sides = [n for n in (iterable.left, iterable.right) if not isinstance(n, (ast.Constant, ast.Name))
                     or isinstance(n, ast.Name) and isinstance(iterable.op, ast.Add)]
            verdicts = [self._eval_elements(n, region, depth + 1) for n in sides]
            return False if verdicts and all(v is False for v in verdicts) else None  # [2] + [1] * (n - 1)
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            return self._any_true(list(iterable.elts), region, depth + 1) if iterable.elts else None
        if isinstance(iterable, (ast.ListComp, ast.GeneratorExp)):
            if isinstance(iterable.elt, (ast.Tuple, ast.List, ast.Dict, ast.DictComp)):
                return None  # rows of (x, y) pairs: containers that may hold tensors
            return self._eval(iterable.elt, region, depth + 1)
        if isinstance(iterable, ast.Constant):
            return False
        if isinstance(iterable, ast.Name) and not NEVER_TENSOR_NAME.match(iterable.id):
            bindings = self._bindings_in(self._scope_of(iterable)).get(iterable.id) or self._bindings_in(
                self.ctx.tree
            ).get(iterable.id)
            statement = bindings[-1][0] if bindings else None
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                return self._eval_elements(statement.value, region, depth + 1)
            return None
        return True if self._eval(iterable, region, depth + 1) is True else None  # rows of a tensor

    def _other_branches(self, first: ast.AST, second: ast.AST) -> bool:
        """Whether two statements sit in the two branches of one ``if``/``else``."""
        for ancestor in self.ctx.ancestors(second):
            if isinstance(ancestor, ast.If):
                inside = {id(n) for stmt in ancestor.orelse for n in ast.walk(stmt)}
                if id(second) in inside:
                    return any(first is n for stmt in ancestor.body for n in ast.walk(stmt))
        return False

    def _scope_of(self, node: ast.AST) -> ast.AST:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, _SCOPES):
                return ancestor
        return self.ctx.tree

    def _bindings_in(self, scope: ast.AST) -> dict[str, list[Binding]]:
        cached = self._bindings.get(scope)
        if cached is None:
            cached = self._bindings[scope] = scope_bindings(scope)
        return cached


_SCALAR_TYPES = frozenset({"int", "float", "bool", "str"})


def _declared_scalar(statement: ast.AST) -> bool:
    """``n: int`` / ``scale: float = 1.0``: a name annotated with a Python scalar type."""
    return isinstance(statement, ast.AnnAssign) and isinstance(statement.annotation, ast.Name) \
        and statement.annotation.id in _SCALAR_TYPES
