"""TT203: a module or parameter hook registered every step and never removed."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ._helpers import method_name, names_in
from ._steps import target_key
from .base import Invalid, Report, Rule, RuleContext, Valid

# Hooks that live on long-lived objects (modules, parameters, the global registry).
_LONG_LIVED_HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
        "register_post_accumulate_grad_hook",
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
    }
)
_STORE_METHODS = frozenset({"append", "extend", "add", "insert", "setdefault"})
_PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})


def _hook_method(ctx: RuleContext, call: ast.Call) -> str | None:
    name = method_name(call) or (ctx.call_qualname(call) or "").rsplit(".", 1)[-1]
    return name if name in _LONG_LIVED_HOOKS or name == "register_hook" else None


def _is_parameter(ctx: RuleContext, receiver: ast.AST) -> bool:
    """``p`` from ``for p in model.parameters()``, or ``layer.weight`` / ``.bias``."""
    if any(isinstance(n, ast.Attribute) and n.attr in ("weight", "bias") for n in ast.walk(receiver)):
        return True
    names = names_in(receiver)
    for ancestor in ctx.ancestors(receiver):
        if isinstance(ancestor, (ast.For, ast.AsyncFor)) and names & names_in(ancestor.target):
            return any(method_name(n) in _PARAMETER_ITERATORS for n in ast.walk(ancestor.iter))
    return False


def _handle_key(ctx: RuleContext, call: ast.Call) -> tuple[str, str | None]:
    """How the handle is kept: ("discarded"|"stored"|"managed", key of where it is stored)."""
    parent = ctx.parents.get(call)
    if isinstance(parent, ast.Expr):
        return "discarded", None
    if isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1:
        key = target_key(parent.targets[0], ctx)
        return ("stored", key) if key else ("managed", None)
    if isinstance(parent, ast.Call) and call in parent.args and method_name(parent) in _STORE_METHODS:
        key = target_key(parent.func.value, ctx)  # type: ignore[attr-defined]
        return ("stored", key) if key else ("managed", None)
    return "managed", None  # a with-item, returned, passed on: someone else owns it


def _removes(ctx: RuleContext, scope: ast.AST, key: str) -> bool:
    """Whether ``scope`` removes the handle(s) kept under ``key`` or hands them to a helper."""
    root = key.split(".")[0]
    for node in ast.walk(scope):
        if not isinstance(node, ast.Call):
            continue
        if method_name(node) == "remove" and not node.args:
            receiver = node.func.value  # type: ignore[attr-defined]
            if target_key(receiver, ctx) == key or _iterates_over(ctx, receiver, key):
                return True
        elif method_name(node) not in _STORE_METHODS:
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if any(target_key(a, ctx) == key or (root == key and root in names_in(a)) for a in arguments):
                return True
    return False


def _iterates_over(ctx: RuleContext, receiver: ast.AST, key: str) -> bool:
    """``h`` in ``for h in handles:`` (or ``handles.values()``) when ``key`` is ``handles``."""
    names = names_in(receiver)
    for ancestor in ctx.ancestors(receiver):
        if isinstance(ancestor, (ast.For, ast.AsyncFor)) and names & names_in(ancestor.target):
            return any(
                isinstance(n, (ast.Name, ast.Attribute)) and ctx.dotted(n) == key for n in ast.walk(ancestor.iter)
            )
    return False


def _registered_once(ctx: RuleContext, call: ast.Call, key: str | None) -> bool:
    """Inside ``if self.handle is None:`` or ``if not hooked: ...; hooked = True``."""
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While)):
            return False
        if not isinstance(ancestor, ast.If):
            continue
        tested = {ctx.dotted(n) for n in ast.walk(ancestor.test) if isinstance(n, (ast.Name, ast.Attribute))}
        if key is not None and key in tested:
            return True
        assigned = {
            ctx.dotted(t)
            for stmt in ancestor.body
            for n in ast.walk(stmt)
            if isinstance(n, ast.Assign)
            for t in n.targets
        }
        if tested & assigned:
            return True
    return False


class HookRegisteredInStep(Rule):
    code = "TT203"
    name = "hook-registered-in-step"
    severity = Severity.WARNING
    category = "memory"
    summary = "A forward/backward hook is registered on a module or parameter every step and never removed."
    why = """
        Each `register_*_hook` call adds one more hook; nothing replaces the
        previous one. After N steps every forward (or backward) runs N hooks,
        so the step gets slower and slower, and each hook's closure keeps
        whatever it captured alive (often the activations it stores), so peak
        memory grows step over step until it runs out. Growing peak memory
        across steps is the signature of something holding on to tensors.
    """
    fix_description = (
        "Register the hook once before the loop, or keep the handle and call `handle.remove()` "
        "at the end of the step (or use `with module.register_forward_hook(fn):`)."
    )
    fix_applicability = None
    example_bad = """
        for x, y in loader:
            model.layer4.register_forward_hook(save_features)
            loss = criterion(model(x), y)
    """
    example_good = """
        handle = model.layer4.register_forward_hook(save_features)
        for x, y in loader:
            loss = criterion(model(x), y)
        handle.remove()
    """
    VALID = (
        Valid(
            """
            handle = model.layer4.register_forward_hook(save_features)
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
            handle.remove()
            """
        ),
        Valid(
            """
            for x, y in loader:
                h = model.encoder.register_forward_hook(capture)
                loss = criterion(model(x), y)
                h.remove()
                loss.backward()
            """
        ),
        Valid(
            """
            # Grad-CAM: the hook lives on this step's activation tensor
            for images, labels in loader:
                feats = model.features(images)
                feats.register_hook(save_grad)
                model.head(feats)[0, labels[0]].backward()
            """
        ),
        Valid(
            """
            class Trainer:
                def train_step(self, batch):
                    if self.hook is None:
                        self.hook = self.model.fc.register_forward_hook(self.capture)
                    loss = self.model(batch).mean()
                    loss.backward()

                def fit(self):
                    for batch in self.train_loader:
                        self.train_step(batch)
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                handles = []
                for name, module in model.named_modules():
                    handles.append(module.register_forward_hook(make_hook(name)))
                model(x).sum().backward()
                for h in handles:
                    h.remove()
            """
        ),
        Valid(
            """
            for step, (x, y) in enumerate(loader):
                if step % 500 == 0:
                    model.fc.register_forward_hook(log_activations)
                model(x).sum().backward()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            for x, y in train_loader:
                feats = {}
                model.layer4.register_forward_hook(lambda m, i, o: feats.update(out=o))
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            def train_step(model, batch):
                handle = model.blocks[-1].register_full_backward_hook(grad_stats)
                loss = model(batch).mean()
                loss.backward()
                return loss

            for batch in loader:
                train_step(model, batch)
            """,
            lines=(2,),
        ),
        Invalid(
            """
            for x, y in loader:
                for p in model.parameters():
                    p.register_hook(lambda g: g.clamp_(-1, 1))
                criterion(model(x), y).backward()
                optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            class Lit(LightningModule):
                def training_step(self, batch, batch_idx):
                    self.handles.append(self.backbone.register_forward_hook(self.grab))
                    return self.loss(self(batch))
            """,
            lines=(3,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call, _region in ctx.hot.nodes(ast.Call):
            hook = _hook_method(ctx, call)
            if hook is None:
                continue
            if hook == "register_hook" and not (
                isinstance(call.func, ast.Attribute) and _is_parameter(ctx, call.func.value)
            ):
                continue
            kept, key = _handle_key(ctx, call)
            if kept == "managed" or _registered_once(ctx, call, key):
                continue
            if kept == "stored" and key is not None:
                scope = ctx.tree if "." in key else (ctx.enclosing_function(call) or ctx.tree)
                if _removes(ctx, scope, key):
                    continue
            yield Report(
                call,
                f"`{hook}` every step adds another hook that is never removed: hooks pile up and "
                "keep what they capture alive; register it once before the loop, or `.remove()` its handle",
            )
