"""TT503: Adam / AdamW / SGD on CUDA without ``fused=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import add_keywords_fix
from ._bindings import resolve_dict
from ..syntax import parameter_defaults
from ..file_kinds import is_test_file
from ._loaders import literal, regions_reached
from .base import Invalid, Report, Rule, RuleContext, Valid

_OPTIMIZERS = {
    "torch.optim.Adam": "Adam",
    "torch.optim.adam.Adam": "Adam",
    "torch.optim.AdamW": "AdamW",
    "torch.optim.adamw.AdamW": "AdamW",
    "torch.optim.SGD": "SGD",
    "torch.optim.sgd.SGD": "SGD",
}
_IMPLEMENTATION_KEYWORDS = ("fused", "foreach", "differentiable")


def _chooses_implementation(ctx: RuleContext, call: ast.Call) -> bool | None:
    """True when the call picks fused/foreach itself; None when a ``**dict`` of this code may.  Options
    passed through from elsewhere (``**p["optimizer_kwargs"]`` from a config, a factory's own ``**kwargs``)
    are the settings people write for an optimizer (lr, betas, weight decay): they pick no implementation."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    for keyword in call.keywords:
        if keyword.arg in _IMPLEMENTATION_KEYWORDS and not _per_tensor_loop(call):
            return True
        if keyword.arg is None:
            model = resolve_dict(ctx, keyword.value, call)
            if model is None and _passed_through(ctx, keyword.value, call):
                continue
            if model is None:
                return None
            if any(model.get(name)[0] for name in _IMPLEMENTATION_KEYWORDS):
                return True
    return False


def _per_tensor_loop(call: ast.Call) -> bool:
    """``foreach=False`` and no ``fused=`` nor ``differentiable=``: the update forced onto the per-tensor loop,
    the slowest implementation there is (a few kernels for every parameter tensor): a choice to undo."""
    given = {k.arg: k.value for k in call.keywords if k.arg in _IMPLEMENTATION_KEYWORDS}
    foreach = given.get("foreach")
    return set(given) == {"foreach"} and isinstance(foreach, ast.Constant) and foreach.value is False


def _passed_through(ctx: RuleContext, value: ast.expr, call: ast.Call) -> bool:
    """A ``**`` value read from a config (``p["optimizer_kwargs"]``, ``cfg.optim.kwargs``) or the enclosing
    function's own ``**kwargs``: not a dict this code builds."""
    if isinstance(value, (ast.Subscript, ast.Attribute)):
        return True
    function = ctx.enclosing_function(call)
    return (isinstance(value, ast.Name) and function is not None and function.args.kwarg is not None
            and function.args.kwarg.arg == value.id)


def trains(ctx: RuleContext) -> bool:
    """Whether the module has per-step code that runs backward or steps an optimizer, or calls
    another project file's training step loop (``train_one_epoch(model, ..., optimizer)``)."""
    return ctx.trains_via is not None or any(region.trains for region in ctx.hot.regions)


class OptimizerNotFused(Rule):
    code = "TT503"
    name = "optimizer-not-fused"
    severity = Severity.INFO
    category = "launch_overhead"
    requires_cuda = True
    summary = "`torch.optim.Adam` / `AdamW` / `SGD` in a CUDA training script without `fused=True`."
    why = """
        The default optimizer implementation launches kernels per group of
        parameter tensors, several for every step of the update; a model with
        hundreds of weight tensors pays hundreds of launches of about 5-20 µs
        each, on every step. `fused=True` does the whole update in a single
        kernel, which helps most when the GPU is starved by launch overhead
        (many small kernels, low utilisation without data-loader gaps).
        `foreach=False` forces the per-tensor loop, a few kernels for every
        parameter tensor, the slowest implementation there is: it is reported
        too (an explicit `foreach=True` or `fused=False` is a choice left alone).
    """
    fix_description = """
        Add `fused=True`. Unsafe: the parameters must be floating-point CUDA
        tensors when the optimizer is built (create it after `model.to(device)`),
        fused `SGD` needs PyTorch 2.3 or newer, and it cannot be combined with
        `differentiable=True`.
    """
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    """
    example_good = """
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    """
    VALID = (
        Valid(
            """
            # the multi-tensor implementation asked for by name, or the per-tensor one where fused is impossible
            import torch
            model = Net().cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=True)
            meta = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False, differentiable=True)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step(); meta.step()
            """
        ),
        Valid(
            """
            # a dict this code builds and fills from the command line may carry fused=...
            import torch
            opt_kwargs = dict(lr=args.lr, betas=(args.beta1, args.beta2))
            opt_kwargs.update(args.opt_kwargs or {})
            optimizer = torch.optim.AdamW(model.parameters(), **opt_kwargs)
            for x, y in loader:
                loss = model(x.cuda(non_blocking=True)).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # picked by name, by default an optimizer with no fused kernel
            import argparse
            from torch import optim
            parser = argparse.ArgumentParser()
            parser.add_argument("--optim", type=str, default="RMSprop")
            args = parser.parse_args()
            model = Net().cuda()
            optimizer = getattr(optim, args.optim)(model.parameters(), lr=1e-3)
            for x, y in loader:
                loss = model(x.cuda(non_blocking=True)).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            import torch
            model = Net().cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # nanoGPT style: fused only where available
            import torch
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=lr, betas=betas, **extra_args)
            for x, y in loader:
                loss = model(x.to("cuda")).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # CPU-only script
            import torch
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            for x, y in loader:
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # builds an optimizer but never trains here (a library helper)
            import torch
            def make_optimizer(model):
                return torch.optim.AdamW(model.cuda().parameters(), lr=1e-4)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # the optimizer class is a parameter that defaults to Adam, kept by the policy's base class
            import torch as th
            from torch import nn

            class BasePolicy(nn.Module):
                def __init__(self, optimizer_class=th.optim.Adam, optimizer_kwargs=None):
                    super().__init__()
                    self.optimizer_class = optimizer_class
                    self.optimizer_kwargs = optimizer_kwargs or {}

            class ActorCriticPolicy(BasePolicy):
                def __init__(self, lr, optimizer_class: type[th.optim.Optimizer] = th.optim.Adam):
                    super().__init__(optimizer_class)
                    self.net = nn.Linear(4, 2).to("cuda")
                    self.optimizer = self.optimizer_class(self.parameters(), lr=lr, **self.optimizer_kwargs)

                def make_critic_optimizer(self, lr):
                    self.critic.optimizer = self.optimizer_class(self.critic.parameters(), lr=lr)
            """,
            lines=(15, 18),
        ),
        Invalid(
            """
            # foreach=False forces the per-tensor loop: the slowest of the three implementations
            import torch
            model = Net().cuda()
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=False)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """,
            lines=(4,),
        ),
        Invalid(
            """
            # options passed through from a config and from the factory's own **kwargs pick no implementation
            import torch
            def build_optimizer(p, params, **kwargs):
                if p["optimizer"] == "sgd":
                    return torch.optim.SGD(params, **p["optimizer_kwargs"])
                return torch.optim.Adam(params, lr=p["lr"], **kwargs)
            model = Net().cuda()
            optimizer = build_optimizer(config, model.parameters())
            for x, y in loader:
                loss = model(x.cuda(non_blocking=True)).sum(); loss.backward(); optimizer.step()
            """,
            lines=(5, 6),
        ),
        Invalid(
            """
            # the optimizer picked by name, by default Adam
            import argparse
            from torch import optim
            parser = argparse.ArgumentParser()
            parser.add_argument("--optim", type=str, default="Adam")
            args = parser.parse_args()
            model = Net().cuda()
            optimizer = getattr(optim, args.optim)(model.parameters(), lr=1e-3)
            for x, y in loader:
                loss = model(x.cuda(non_blocking=True)).sum(); loss.backward(); optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # an agent that keeps its networks and their optimizer: it trains them, here through a base class's method
            import torch
            from torch import optim
            from agents.base import BaseAgent

            class DQN(BaseAgent):
                def __init__(self, config):
                    super().__init__(config)
                    self.q_network = self.create_network().to("cuda")
                    self.q_optimizer = optim.Adam(self.q_network.parameters(), lr=config.lr)

                def learn(self, states, targets):
                    loss = ((self.q_network(states) - targets) ** 2).mean()
                    self.take_optimisation_step(self.q_optimizer, self.q_network, loss)
            """,
            lines=(10,),
        ),
        Invalid(
            """
            import torch
            from torch import optim
            model = Net().to("cuda")
            optimizer = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """,
            lines=(4,),
            fixed="""
            import torch
            from torch import optim
            model = Net().to("cuda")
            optimizer = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch.optim as optim
            from torch.optim import SGD
            device = "cuda"
            model.to(device)
            opt_kwargs = {"lr": 0.1, "momentum": 0.9}
            if args.nesterov:
                opt_kwargs["nesterov"] = True
            optimizer = SGD(model.parameters(), **opt_kwargs)
            head_opt = optim.Adam(
                head.parameters(),
                lr=1e-3,
            )

            def train_step(x, y):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                head_opt.step()

            for x, y in loader:
                train_step(x.to(device), y.to(device))
            """,
            lines=(8, 9),
        ),
        Invalid(
            """
            import torch
            class LitModel(pl.LightningModule):
                def configure_optimizers(self):
                    return torch.optim.Adam(self.parameters(), lr=1e-3)

                def training_step(self, batch, batch_idx):
                    return self.model(batch.cuda()).loss
            """,
            lines=(4,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if is_test_file(ctx.path, ctx.source):
            return
        training = trains(ctx) or _lightning(ctx)
        if not training and not ctx.trainer_calls and "self." not in ctx.source:
            return
        for node in ctx.nodes_of(ast.Call):
            assert isinstance(node, ast.Call)
            short = _OPTIMIZERS.get(ctx.call_qualname(node) or "") or _named_optimizer(ctx, node) or _defaulted_optimizer(ctx, node)
            if short is None or _chooses_implementation(ctx, node) is not False:
                continue
            if not training and (not (_in_trainer_call(ctx, node) or _kept_by_an_agent(ctx, node)) or _offers_fused(ctx, node)):
                continue  # a file that does not train: only what a training file's call builds (a factory) counts,
                # and not a factory that offers a fused optimizer by a flag (``--optim fused_adam``)
            forced = " (`foreach=False` forces the per-tensor loop, the slowest implementation)" if _per_tensor_loop(node) else ""
            yield Report(
                node.func,
                f"`{short}` runs its update as many small kernels per step{forced}: "
                "add `fused=True` for one fused kernel (parameters must be on the GPU)",
                fix=lambda node=node: add_keywords_fix(
                    ctx, node, [("fused", "True")], "Add fused=True", Applicability.UNSAFE
                ),
            )


def _named_optimizer(ctx: RuleContext, node: ast.Call) -> str | None:
    """``getattr(optim, args.optim)(model.parameters(), lr=lr)`` with ``--optim`` defaulting to ``"Adam"``: the
    optimizer the run builds by default."""
    func = node.func
    if not (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"
            and func.func.id not in ctx.aliases and len(func.args) == 2):
        return None
    if ctx.qualname(func.args[0]) != "torch.optim":
        return None
    name = literal(ctx, func.args[1], node)
    return _OPTIMIZERS.get(f"torch.optim.{name}") if isinstance(name, str) else None


def _defaulted_optimizer(ctx: RuleContext, node: ast.Call) -> str | None:
    """``self.optimizer_class(self.parameters(), lr=lr)`` or ``optimizer_class(params)``, where the class is a
    parameter that defaults to ``torch.optim.Adam`` (``optimizer_class: type[Optimizer] = th.optim.Adam``): kept by
    the enclosing function, or by the class as ``self.optimizer_class = optimizer_class``, or named so among its
    ``__init__``'s parameters (a subclass handing it to its base's ``__init__``)."""
    func = node.func
    names = ctx.memo.get(_defaulted_optimizer)
    if names is None:  # the default must name one of the optimizers (``_OPTIMIZERS``): looked for once per analysis
        names = ctx.memo[_defaulted_optimizer] = "Adam" in ctx.source or "SGD" in ctx.source
    if not names:
        return None
    if isinstance(func, ast.Name):
        function = ctx.enclosing_function(node)
        return _optimizer_default(ctx, function, func.id) if function is not None else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    cls = ctx.enclosing_class(node)
    if cls is None:
        return None
    kept = ctx.memo.get((_defaulted_optimizer, cls))
    if not isinstance(kept, dict):
        kept = ctx.memo[(_defaulted_optimizer, cls)] = _kept_optimizer_classes(ctx, cls)
    return kept.get(func.attr)


def _kept_optimizer_classes(ctx: RuleContext, cls: ast.ClassDef) -> dict[str, str]:
    """``self.<attr>`` -> the optimizer it holds by default, for a class: its ``__init__``'s parameters that default
    to one, and ``self.<attr> = torch.optim.Adam`` or ``= <parameter defaulting to one>`` in any method (the first
    found, in the order of the class's methods).  Found once per class and analysis: a class's every
    ``self.m(...)`` call asks."""
    kept: dict[str, str] = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if method.name == "__init__":
            for arg, default in parameter_defaults(method.args).items():
                found = _OPTIMIZERS.get(ctx.qualname(default) or "")
                if found:
                    kept.setdefault(arg.arg, found)
        for statement in ast.walk(method):
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(target := statement.targets[0], ast.Attribute) \
                    and isinstance(target.value, ast.Name) and target.value.id == "self" and target.attr not in kept:
                value = statement.value
                found = _OPTIMIZERS.get(ctx.qualname(value) or "") or (
                    _optimizer_default(ctx, method, value.id) if isinstance(value, ast.Name) else None)
                if found:
                    kept[target.attr] = found
    return kept


def _optimizer_default(ctx: RuleContext, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> str | None:
    """The optimizer a parameter ``name`` of ``function`` defaults to (``= torch.optim.Adam``), if any."""
    for arg, default in parameter_defaults(function.args).items():
        if arg.arg == name:
            return _OPTIMIZERS.get(ctx.qualname(default) or "")
    return None


def _in_trainer_call(ctx: RuleContext, node: ast.AST) -> bool:
    """Inside a function of this file that a training file calls (``get_optimizer(cfg, model)``), or in
    a method of a class it names."""
    function = ctx.enclosing_function(node)
    while function is not None:
        if function.name in ctx.trainer_calls:
            return True
        function = ctx.enclosing_function(function)
    return False


def _kept_by_an_agent(ctx: RuleContext, node: ast.Call) -> bool:
    """Built into an attribute of the object that owns the networks (``self.critic_optimizer = Adam(...)`` in an
    agent's or a trainer's method): the object trains them, wherever its training step is written (often a
    method of a base class in another file)."""
    parent = ctx.parents.get(node)
    if not isinstance(parent, ast.Assign) or parent.value is not node:
        return False
    targets = parent.targets
    if len(targets) != 1 or not isinstance(targets[0], ast.Attribute):
        return False
    root = targets[0].value
    while isinstance(root, ast.Attribute):  # ``self.actor.optimizer = ...``: kept by a network the object owns
        root = root.value
    return isinstance(root, ast.Name) and root.id == "self" and ctx.enclosing_class(node) is not None


def _offers_fused(ctx: RuleContext, node: ast.AST) -> bool:
    """The enclosing function also builds a fused optimizer (``FusedAdam(...)``, ``fused=True``): a choice."""
    function = ctx.enclosing_function(node)
    for other in ast.walk(function) if function is not None else ():
        if isinstance(other, ast.Call) and other is not node:
            name = other.func.attr if isinstance(other.func, ast.Attribute) else getattr(other.func, "id", "")
            if "fused" in name.lower() or any(k.arg == "fused" for k in other.keywords):
                return True
    return False


def _lightning(ctx: RuleContext) -> bool:
    """A LightningModule's ``training_step``: Lightning runs backward and the optimizer."""
    return any(
        region.kind == "lightning-step" and getattr(region.node, "name", "") == "training_step"
        for region in regions_reached(ctx, ctx.hot.regions)
    )
