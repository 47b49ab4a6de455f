"""TT506: ``backward(retain_graph=True)`` every step with nothing reusing the graph."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..hotloops.finder import HotRegion, is_backward_call
from ..syntax import keyword_value
from ._tt506_callfix import remove_keyword_fix
from ._helpers import method_name
from ._steps import differentiated_tensor, is_constant, own_walk, step_family
from .base import Invalid, Report, Rule, RuleContext, Valid

_BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward", "torch.autograd.grad"})
# Tensor methods that keep the receiver's graph (``loss.mean().backward()``).
_TENSOR_METHODS = frozenset({"mean", "sum", "float", "double", "half", "squeeze", "view", "reshape", "mul", "div", "add"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _is_any_backward(ctx: RuleContext, node: ast.AST) -> bool:
    return (
        is_backward_call(node)
        or method_name(node) == "manual_backward"
        or ctx.call_qualname(node) in _BACKWARD_FUNCTIONS
    )


def _graph_roots(node: ast.AST) -> set[str] | None:
    """Names whose graph the tensor comes from; None when it is not understood."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _graph_roots(node.value)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _TENSOR_METHODS:
            return _graph_roots(node.func.value)
        return set()  # computed right here: a fresh graph
    if isinstance(node, ast.BinOp):
        left, right = _graph_roots(node.left), _graph_roots(node.right)
        return None if left is None or right is None else left | right
    if isinstance(node, ast.UnaryOp):
        return _graph_roots(node.operand)
    if isinstance(node, ast.Constant):
        return set()
    return None


def _freshly_computed(ctx: RuleContext, region: HotRegion, name: str) -> bool:
    """Whether the step assigns ``name`` from a computation (a call), not a loop variable."""
    for node in own_walk(region.node):
        if isinstance(node, ast.Assign) and ctx.hot.region_of(node) is region:
            bound = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name in bound and any(isinstance(n, ast.Call) for n in ast.walk(node.value)):
                return True
    return False


def _nested_in_loop(ctx: RuleContext, region: HotRegion) -> bool:
    """An inner loop may backpropagate several times through a graph built outside it."""
    if not isinstance(region.node, _LOOPS):
        return False
    for ancestor in ctx.ancestors(region.node):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(ancestor, _LOOPS):
            # an epoch loop around the step loop runs no backward of its own: whether the graph is
            # built in the step is checked by the caller
            if ancestor in ctx.hot.epoch_loops and not _carries_state(ancestor, region.node):
                continue
            return True
    return False


def _assigned_names(nodes: list[ast.stmt], skip: ast.AST | None = None) -> set[str]:
    names: set[str] = set()
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        if node is skip or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _carries_state(epoch: ast.AST, step: ast.AST) -> bool:
    """A name set once per epoch and re-bound every step (``hidden = model.init_hidden()`` then
    ``out, hidden = model(x, hidden)``): the graph may span steps."""
    outer = _assigned_names(getattr(epoch, "body", []), skip=step)
    inner = _assigned_names(getattr(step, "body", []))
    return bool(outer & inner)


class RetainGraphInStep(Rule):
    code = "TT506"
    name = "retain-graph-in-step"
    severity = Severity.WARNING
    category = "memory"
    summary = "`backward(retain_graph=True)` every step although nothing in the step backpropagates through that graph again."
    why = """
        `retain_graph=True` tells autograd to keep every activation saved for
        backward after the backward pass is done. When nothing calls backward
        or `torch.autograd.grad` through the same graph again, those tensors
        simply stay alive until the loss goes out of scope, raising peak
        memory and, if anything from the step is kept, making memory grow step
        over step. It is often added to silence "Trying to backward through the
        graph a second time", which means state (an RNN hidden state, an EMA
        tensor) carries the graph from one step into the next: detach that
        state instead.
    """
    fix_description = "Remove `retain_graph=True`; if backward then fails, detach the state carried between steps."
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward(retain_graph=True)
            optimizer.step()
    """
    example_good = """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    VALID = (
        Valid(
            """
            # GAN: the discriminator loss graph is reused by the generator's backward
            for real, _ in loader:
                fake = gen(noise)
                d_loss = bce(disc(real), ones) + bce(disc(fake), zeros)
                d_loss.backward(retain_graph=True)
                opt_d.step()
                g_loss = bce(disc(fake), ones)
                g_loss.backward()
                opt_g.step()
            """
        ),
        Valid(
            """
            # multi-task: one forward, one backward per head
            for x, y in loader:
                out_a, out_b = model(x)
                losses = [crit(out_a, y), crit(out_b, y)]
                for l in losses:
                    l.backward(retain_graph=True)
                optimizer.step()
            """
        ),
        Valid(
            """
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(retain_graph=True)
                grads = torch.autograd.grad(loss, model.parameters())
                optimizer.step()
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward(create_graph=True, retain_graph=True)  # higher order
                optimizer.step()
            """
        ),
        Valid(
            """
            loss = criterion(model(x), y)
            loss.backward(retain_graph=True)   # once, outside any step
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward(retain_graph=True)
                optimizer.step()
            """,
            lines=(4,),
            fixed="""
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
        ),
        Invalid(
            """
            # RNN language model: hidden state carried (not detached) between steps
            hidden = model.init_hidden(bsz)
            for i, (data, targets) in enumerate(batches):
                output, hidden = model(data, hidden)
                loss = criterion(output, targets)
                scaler.scale(loss).backward(retain_graph=True)
                scaler.step(optimizer)
                scaler.update()
            """,
            lines=(6,),
            fixed="""
            # RNN language model: hidden state carried (not detached) between steps
            hidden = model.init_hidden(bsz)
            for i, (data, targets) in enumerate(batches):
                output, hidden = model(data, hidden)
                loss = criterion(output, targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            class Lit(LightningModule):
                def training_step(self, batch, batch_idx):
                    opt = self.optimizers()
                    loss = self.loss_fn(self(batch[0]), batch[1])
                    self.manual_backward(loss, retain_graph=True)
                    opt.step()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            def train_step(model, batch, opt):
                criterion(model(batch[0]), batch[1]).mean().backward(retain_graph=True)
                opt.step()

            for batch in loader:
                train_step(model, batch, opt)
            """,
            lines=(2,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call, region in ctx.hot.nodes(ast.Call):
            if not _is_any_backward(ctx, call) or ctx.call_qualname(call) == "torch.autograd.grad":
                continue
            if not is_constant(keyword_value(call, "retain_graph"), True):
                continue
            create = keyword_value(call, "create_graph")
            if create is not None and not is_constant(create, False):
                continue
            if not self._graph_is_used_once(ctx, call, region):
                continue
            yield Report(
                call,
                "`retain_graph=True` keeps this step's saved activations alive though nothing "
                "backpropagates through them again: remove it",
                fix=lambda call=call: remove_keyword_fix(
                    ctx, call, "retain_graph", "Remove retain_graph=True", Applicability.UNSAFE
                ),
            )

    @staticmethod
    def _graph_is_used_once(ctx: RuleContext, call: ast.Call, region: HotRegion) -> bool:
        """True only when the tensor is computed in this step and differentiated once."""
        if _nested_in_loop(ctx, region):
            return False
        tensor = differentiated_tensor(ctx, call)
        roots = _graph_roots(tensor) if tensor is not None else None
        if roots is None or not all(_freshly_computed(ctx, region, name) for name in roots):
            return False
        for member in step_family(ctx, region):
            for node in own_walk(member.node):
                if node is not call and _is_any_backward(ctx, node):
                    return False
        return True
