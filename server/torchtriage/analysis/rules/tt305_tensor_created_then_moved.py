"""TT305: a tensor built on the CPU and then copied to the GPU, every step."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Collection, Iterator

from ...findings import Applicability, Fix, Severity
from ..fixes import add_keywords_fix, replace_expression, with_keyword
from ..file_kinds import is_test_file
from ..syntax import keyword_value, parameter_defaults
from ._helpers import is_device_move, method_name
from ._bindings import parameter_names
from ._forward_code import forward_calls
from ._legacy_tensors import legacy_created, legacy_over_host_data
from ._tt305_constant_tables import constant_table
from ._tt305_host_built import FACTORIES, RANDOM_FACTORIES, host_math_factory, loop_invariant_array, numpy_made
from ..parsing import LEGACY_ASYNC
from .base import Invalid, Report, Rule, RuleContext, Valid

if TYPE_CHECKING:
    import libcst as cst
else:
    from ..lazy import libcst as cst  # imported on first use: only fixes need it

_DEVICE_NAME = re.compile(r"(device|^dev$|_dev$|^dev_|gpu|rank)", re.I)
_ACCELERATORS = ("cuda", "mps", "xpu", "npu", "hpu")


def _data_parameters(func: ast.AST | None) -> set[str]:
    """A forward-code function's parameters that may carry the step's data: not those with a number for a
    default (``max_period=10000``: a setting, which no tensor travels in)."""
    names = parameter_names(func)
    if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names -= {a.arg for a, d in parameter_defaults(func.args).items() if isinstance(d, ast.Constant) and type(d.value) in (int, float)}
    return names


def _factory(ctx: RuleContext, node: ast.AST) -> str | None:
    """``torch.zeros`` & co. called without a device (or with device="cpu"): the short name."""
    qual = ctx.call_qualname(node) or ""
    head, _, short = qual.rpartition(".")
    if head != "torch" or short not in FACTORIES | RANDOM_FACTORIES:
        return None
    assert isinstance(node, ast.Call)
    device = keyword_value(node, "device")
    if device is not None and not (isinstance(device, ast.Constant) and device.value == "cpu"):
        return None
    return short


def _is_device_like(ctx: RuleContext, node: ast.expr) -> bool:
    """An expression that names a device, as opposed to a dtype or another tensor."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] in _ACCELERATORS
    if isinstance(node, ast.Call):
        return (ctx.call_qualname(node) or "") in ("torch.device", "torch.cuda.current_device")
    if isinstance(node, ast.Attribute) and node.attr == "device":
        return True
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(_DEVICE_NAME.search(name))


def _target_device(ctx: RuleContext, move: ast.Call) -> tuple[str, str | None] | None:
    """(device source, dtype source) of ``.to(...)``/``.cuda()``, or None when not a plain device move."""
    name = method_name(move)
    allowed = {"non_blocking", LEGACY_ASYNC}
    if name == "cuda":
        if move.args or any(k.arg not in allowed for k in move.keywords):
            return None
        return '"cuda"', None
    if name != "to":
        return None
    device = keyword_value(move, "device") or (move.args[0] if move.args else None)
    if device is None or not _is_device_like(ctx, device):
        return None
    dtype = keyword_value(move, "dtype") or (move.args[1] if len(move.args) > 1 else None)
    if len(move.args) > 2 or any(k.arg not in allowed | {"device", "dtype"} for k in move.keywords):
        return None
    return ctx.segment(device), (ctx.segment(dtype) if dtype is not None else None)


def _moved_to_input(ctx: RuleContext, move: ast.Call) -> bool:
    """``.to(x)`` in forward code where ``x`` is one of the function's inputs (a tensor of the step, on the
    device): the result goes to ``x``'s device (and dtype).  Not ``.to(dtype)`` & co. (a cast)."""
    if method_name(move) != "to" or len(move.args) != 1 or move.keywords or not isinstance(move.args[0], ast.Name):
        return False
    lowered = move.args[0].id.lower()
    if not is_device_move(move) or "type" in lowered or "precision" in lowered:  # (is_device_move: not ``.to(dtype)``)
        return False
    return move.args[0].id in _data_parameters(ctx.enclosing_function(move))


def _factory_keywords(factory: ast.Call, device: str, dtype: str | None) -> list[tuple[str, str]] | None:
    keywords = [("device", device)]
    if dtype is not None:
        if keyword_value(factory, "dtype") is not None:
            return None
        keywords.append(("dtype", dtype))
    return keywords


def _applicability(short: str) -> Applicability:
    # Random factories draw from the device's generator: same distribution, different numbers.
    return Applicability.UNSAFE if short in RANDOM_FACTORIES else Applicability.SAFE


def _chained_fix(ctx: RuleContext, move: ast.Call, factory: ast.Call, short: str) -> Fix | None:
    target = _target_device(ctx, move)
    keywords = target and _factory_keywords(factory, *target)
    if not keywords or _drops_comment(ctx, move, factory):
        return None

    def transform(expression: cst.BaseExpression) -> cst.BaseExpression:
        assert isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute)
        result = expression.func.value
        for name, value in keywords:
            result = with_keyword(result, name, value)
        return result

    return replace_expression(ctx, move, transform, f"Create with device={keywords[0][1]}", _applicability(short))


def _drops_comment(ctx: RuleContext, move: ast.Call, factory: ast.Call) -> bool:
    """Whether the ``.to(...)`` text that the fix deletes holds a comment."""
    start_line, end_line = factory.end_lineno or factory.lineno, move.end_lineno or move.lineno
    if start_line == end_line:
        return False  # a comment cannot sit inside one line of code
    first = ctx.lines[start_line - 1][ctx.char_column(start_line, factory.end_col_offset or 0) :]
    last = ctx.lines[end_line - 1][: ctx.char_column(end_line, move.end_col_offset or 0)]
    return any("#" in text for text in [first, *ctx.lines[start_line : end_line - 1], last])


def _next_use(ctx: RuleContext, assign: ast.Assign, name: str, host_data: Collection[str]) -> tuple[ast.stmt | None, bool]:
    """The first later statement of the same block that mentions ``name`` other than to write into it from
    no host data (``theta[:, :, -1] = theta_i`` in forward code; ``weights[y == 0] = 0.1`` with the loader's ``y``
    makes it data that travels), and whether such writes came first."""
    parent = ctx.parents.get(assign)
    filled = False
    for _, body in ast.iter_fields(parent) if parent is not None else ():
        if isinstance(body, list) and assign in body:
            for stmt in body[body.index(assign) + 1 :]:
                if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
                    continue
                if _writes_into(stmt, name) and not any(isinstance(n, ast.Name) and n.id in host_data for n in ast.walk(stmt)):
                    filled = True
                    continue
                return stmt, filled
    return None, filled


def _writes_into(stmt: ast.stmt, name: str) -> bool:
    """``name[...] = value`` / ``name[...] += value`` where ``value`` does not read ``name``: a fill, not a use."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AugAssign) else []
    if not targets or not all(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
                              for t in targets):
        return False
    value = stmt.value  # type: ignore[union-attr]
    return not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))


def _moves_of(stmt: ast.stmt, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(stmt)
        if isinstance(node, ast.Call)
        and method_name(node) in ("to", "cuda")
        and isinstance(node.func.value, ast.Name)  # type: ignore[attr-defined]
        and node.func.value.id == name  # type: ignore[attr-defined]
    ]


class TensorCreatedThenMoved(Rule):
    code = "TT305"
    name = "tensor-created-then-moved"
    severity = Severity.WARNING
    category = "data_loading"
    requires_cuda = True
    summary = "A tensor is created on the CPU and then copied to the GPU with `.to(device)` / `.cuda()` every step."
    why = """
        `torch.zeros(n).to(device)` allocates and fills the tensor in host memory,
        then performs a blocking host-to-device copy: a CPU allocation, a transfer
        and a synchronisation point in every step, where `torch.zeros(n,
        device=device)` is a single kernel launch (roughly 5-20 µs) on the GPU.
        Per-step copies like this keep the CPU from running ahead and leave
        gaps in the GPU timeline.
    """
    fix_description = """
        Pass `device=` (and `dtype=` if the move converted it) to the factory and
        drop the move. Safe for deterministic factories; for `rand`, `randn`,
        `randint` and `randperm` the fix is unsafe because the numbers then come
        from the GPU's random generator.
    """
    fix_applicability = Applicability.SAFE
    example_bad = """
        for x, y in loader:
            mask = torch.ones(x.shape[0]).to(device)
    """
    example_good = """
        for x, y in loader:
            mask = torch.ones(x.shape[0], device=device)
    """
    VALID = (
        Valid(
            """
            # the array changes from step to step (a schedule's weights): no one conversion serves every step
            import torch

            def fit_one_epoch(model, gen, optimizer, local_rank, schedule):
                for step, (imgs, labels) in enumerate(gen):
                    weights = schedule.weights_at(step)
                    weights = torch.from_numpy(weights).cuda(local_rank)
                    loss = (model(imgs.cuda(local_rank)) * weights).mean()
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Valid(
            """
            # the step's own data cast and moved, and a tensor already made on the device
            import torch
            for x, lengths in loader:
                x = x.cuda(non_blocking=True)
                order = lengths.long().to(x.device)
                ramp = torch.arange(x.size(1), device=x.device).float().to(x.device)
                loss = model(x, order, ramp).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                mask = torch.ones(x.shape[0], device=device)
                loss = model(x.to(device), mask).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            device = torch.device("cuda")
            pos = torch.arange(seq_len).to(device)  # once, before training
            for x, y in loader:
                loss = model(x.to(device), pos).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for x, y in loader:
                ids = torch.tensor(x).to(torch.long)  # a dtype conversion, stays on the CPU
                loss = model(ids.cuda()).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for x, y in loader:
                weights = torch.ones(len(y))
                weights[y == 0] = 0.1  # filled on the CPU before the move
                weights = weights.cuda()
                loss = (model(x.cuda()) * weights).sum(); loss.backward()
            """
        ),
        Valid(
            """
            # the same helper handed an array the step itself fills (set in step(), not __init__), or the step's data
            import numpy as np
            import torch

            class Sampler:
                def __init__(self, n):
                    self.weights = np.ones(n)
                    self.scale = np.full(n, 0.5)

                def step(self, x, t):
                    self.weights = np.random.dirichlet(np.ones(len(self.weights)))
                    return _extract(self.weights, t, x.shape) * x

                def data(self, x, t, batch_np):
                    return _gather(batch_np * self.scale, t) * x

            def _extract(arr, timesteps, shape):
                return torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()

            def _gather(arr, timesteps):
                return torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()

            sampler = Sampler(1000)
            for x, batch_np in loader:
                x = x.cuda(non_blocking=True)
                t = torch.randint(0, 1000, (x.shape[0],), device="cuda")
                loss = model(sampler.step(x, t) + sampler.data(x, t, batch_np)).mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # host-computed data (an alignment filled in by a C function, a NumPy batch) has to travel
            import numpy as np
            import torch
            for x, batch_np in loader:
                path = np.zeros(tuple(x.shape), dtype=np.int32)
                align_c(path, x.numpy())
                x = torch.from_numpy(batch_np).to("cuda")
                loss = model(x, torch.from_numpy(path).to(x.device)).sum()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a module's forward: a cache filled once per shape, and a sampling branch a training step never opens
            import torch
            from torch import nn

            class Flow(nn.Module):
                def forward(self, x, reverse=False):
                    if self.mask is None or self.mask.size(0) != x.size(0):
                        self.mask = torch.ones(x.size(0)).to(x.device)
                    if not reverse:
                        out = x * self.mask
                    else:
                        z = torch.randn(x.size(0), 2).to(x.device)
                        out = self.decode(z)
                    return out

            model = Flow().cuda()
            """
        ),
        Valid(
            """
            # forward's inputs wrapped and moved: the batch's copy (TT301's case); a cast to an input's dtype; in
            # the loops, rows gathered from the batch's items and a list of the step's data are the batch's too
            import torch
            from torch import nn

            class SeqModel(nn.Module):
                def forward(self, log_seqs, dtype):
                    seqs = self.emb(torch.LongTensor(log_seqs).to(self.dev))
                    return seqs.to(dtype)

            model = SeqModel().cuda()
            device = torch.device("cuda")
            for step in range(iterations):
                batch_graph = [train_graphs[i] for i in sample(step)]
                labels = torch.LongTensor([graph.label for graph in batch_graph]).to(device)
                loss = (model(batch_graph, torch.float32) - labels).sum(); loss.backward()
            for graphs, sizes in loader:
                counts = torch.LongTensor([sizes]).to(device)
                loss = (model(graphs, torch.float32) * counts).sum(); loss.backward()
            """
        ),
        Valid(
            """
            # a batch array wrapped and copied: data that travels anyway (TT301's case, not this rule's)
            import torch
            device = torch.device("cuda")
            for user_ids, item_seqs in loader:
                items = torch.LongTensor(item_seqs).to(device)
                loss = model(user_ids, items).sum(); loss.backward()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # a host tensor made, filled in slice by slice, then moved: still made on the wrong device
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, theta_i):
                    theta = torch.zeros(theta_i.size(0), 2, 3)
                    theta[:, :, :2] = 1.0
                    theta[:, :, -1] = theta_i
                    if torch.cuda.is_available():
                        theta = theta.cuda()
                    return theta

            model = Attention().cuda()
            """,
            lines=(7,),
        ),
        Invalid(
            """
            # positions made on the host, given new dimensions by indexing, then moved in a length regulator
            import torch
            from torch import nn

            class LengthRegulator(nn.Module):
                def forward(self, dur):
                    token_idx = torch.arange(1, dur.shape[1] + 1)[None, :, None].to(dur.device)
                    return token_idx <= torch.cumsum(dur, 1)[:, None]

            model = LengthRegulator().cuda()
            """,
            lines=(7,),
        ),
        Invalid(
            """
            # host-made positions expanded to the batch's size, and harmonics counted out in a nested list
            import torch
            from torch import nn

            class Embed(nn.Module):
                def forward(self, x, n):
                    t = torch.arange(0, x.shape[1]).unsqueeze(0).expand((len(x), x.shape[1])).to(x.device)
                    harmonics = torch.FloatTensor([[range(1, n + 2)]]).to(x.device)
                    return x + t, harmonics

            model = Embed().cuda()
            """,
            lines=(7, 8),
        ),
        Invalid(
            """
            # a legacy constructor over range(): numbers counted out on the host, reshaped, then moved
            import torch
            device = torch.device("cuda")
            for images, boxes in loader:
                n = boxes.size(1)
                index = torch.LongTensor(range(n)).to(device)
                ranks = torch.LongTensor(range(n)).unsqueeze(0).expand_as(boxes[..., 0]).to(device)
                loss = model(images.to(device, non_blocking=True), index, ranks).sum(); loss.backward()
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            # casts and reshapes on the host before the move; a size read from a tensor is not data
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, attn, batch, edge_index):
                    uniform = (torch.ones([4, 8, 16, 16]) / 16).type_as(attn).to(attn.device)
                    mask = ~torch.eye(attn.size(0)).bool().to(attn.device)
                    virtual = torch.zeros(batch[-1].item() + 1).to(edge_index.dtype).to(edge_index.device)
                    return attn * uniform * mask, virtual

            model = Attention().cuda()
            """,
            lines=(7, 8, 9),
        ),
        Invalid(
            """
            # forward's own host values wrapped by a legacy constructor, a factory moved to an input's device,
            # and a list the step writes out itself
            import torch
            from torch import nn

            class LengthRegulator(nn.Module):
                def forward(self, x, duration):
                    mel_len = [int(d.sum()) for d in duration]
                    mask = torch.zeros(x.size(0), 1).to(x)
                    return x * mask, torch.LongTensor(mel_len).to(x.device)

            model = LengthRegulator().cuda()
            device = torch.device("cuda")
            for images, durations in loader:
                lengths = torch.IntTensor([25] * images.size(0)).to(device)
                out, mel_len = model(images.to(device, non_blocking=True), durations)
                loss = (out.sum() + lengths.sum()); loss.backward()
            """,
            lines=(9, 10, 15),
        ),
        Invalid(
            """
            # legacy typed constructors take no device=: sizes and written-out numbers, made on the CPU
            import torch
            device = torch.device("cuda")
            for images, labels in loader:
                hidden = torch.FloatTensor(images.size(0), 256).fill_(0).to(device)
                scale = torch.sqrt(torch.FloatTensor([0.5]).to(device))
                loss = model(images, hidden).sum() * scale; loss.backward()
            """,
            lines=(5, 6),
        ),
        Invalid(
            """
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                mask = torch.ones(x.shape[0]).to(device)
                loss = model(x.to(device), mask).sum(); loss.backward()
            """,
            lines=(4,),
            fixed="""
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                mask = torch.ones(x.shape[0], device=device)
                loss = model(x.to(device), mask).sum(); loss.backward()
            """,
        ),
        Invalid(
            """
            import torch as th

            def training_step(model, batch, optimizer):
                x, y = batch
                labels = th.tensor(y, dtype=th.long).cuda(non_blocking=True)
                noise = th.randn(x.shape).to("cuda", th.float16)
                loss = model(x.cuda() + noise, labels)
                loss.backward(); optimizer.step()

            for batch in train_loader:
                training_step(model, batch, optimizer)
            """,
            lines=(5, 6),
            fixed="""
            import torch as th

            def training_step(model, batch, optimizer):
                x, y = batch
                labels = th.tensor(y, dtype=th.long, device="cuda")
                noise = th.randn(x.shape, device="cuda", dtype=th.float16)
                loss = model(x.cuda() + noise, labels)
                loss.backward(); optimizer.step()

            for batch in train_loader:
                training_step(model, batch, optimizer)
            """,
        ),
        Invalid(
            """
            import torch
            assert torch.cuda.is_available()
            for step, (x, y) in enumerate(loader):
                hidden = torch.zeros(2, x.size(0), 256)
                hidden = hidden.to(args.device)
                out, hidden = model(x.to(args.device), hidden)
                out.sum().backward()
            """,
            lines=(4,),
            fixed="""
            import torch
            assert torch.cuda.is_available()
            for step, (x, y) in enumerate(loader):
                hidden = torch.zeros(2, x.size(0), 256, device=args.device)
                hidden = hidden.to(args.device)
                out, hidden = model(x.to(args.device), hidden)
                out.sum().backward()
            """,
        ),
        Invalid(
            """
            # a sinusoidal step embedding, and a random mask made with NumPy, every step
            import math
            import numpy as np
            import torch

            for x, t in loader:
                x, t = x.cuda(non_blocking=True), t.cuda(non_blocking=True)
                freqs = torch.exp(-math.log(10000) * torch.arange(32, dtype=torch.float32) / 32).to(device=t.device)
                keep = np.random.choice(2, tuple(x.shape), p=[0.1, 0.9])
                mask = torch.from_numpy(keep).to(x.device)
                loss = model(x * mask, t[:, None] * freqs).sum()
                loss.backward()
                optimizer.step()
            """,
            findings=(
                ("8:13-8:105", "`torch.arange(...)` and the math on it run on the CPU and the result is copied to the GPU "
                 "every step: pass `device=` to the factory instead"),
                ("10:12-10:47", "an array made by `np.random.choice(...)` on the CPU is copied to the GPU every step: make it "
                 "with torch on the device (`torch.rand(..., device=...)`, `torch.arange(..., device=...)`)"),
            ),
        ),
        Invalid(
            """
            # a noise schedule set once in __init__, wrapped and copied by a helper at every call (diffusion training)
            import numpy as np
            import torch

            class Diffusion:
                def __init__(self, betas):
                    self.alphas_cumprod = np.cumprod(1.0 - betas)

                def q_sample(self, x0, t, noise):
                    scale = np.sqrt(self.alphas_cumprod)
                    return _extract(scale, t, x0.shape) * x0 + _extract(1.0 - self.alphas_cumprod, t, x0.shape) * noise

            def _extract(arr, timesteps, shape):
                return torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float().view(-1, *([1] * (len(shape) - 1)))

            diffusion = Diffusion(np.linspace(1e-4, 0.02, 1000))
            for x0, _ in loader:
                x0 = x0.cuda(non_blocking=True)
                t = torch.randint(0, 1000, (x0.shape[0],), device="cuda")
                noise = torch.randn_like(x0)
                loss = ((model(diffusion.q_sample(x0, t, noise), t) - noise) ** 2).mean()
                loss.backward()
                optimizer.step()
            """,
            findings=(
                ("14:12-14:61", "the array `self.alphas_cumprod`, set once in `__init__`, is wrapped on the CPU and copied to "
                 "the GPU on every call: convert it to a device tensor once (a registered buffer, or `.to(device)` in "
                 "`__init__`)"),
            ),
        ),
        Invalid(
            """
            # episode labels wrapped from a NumPy array in one statement, moved in the next (few-shot training)
            import numpy as np
            import torch

            for x, _ in loader:
                y_query = torch.from_numpy(np.repeat(range(n_way), n_query))
                y_query = y_query.cuda()
                loss = loss_fn(model(x.cuda(non_blocking=True)), y_query)
                loss.backward()
                optimizer.step()
            """,
            lines=(7,),
        ),
        Invalid(
            """
            # timesteps drawn with NumPy, wrapped, cast and moved in one expression (a diffusion schedule sampler)
            import numpy as np
            import torch

            for x, _ in loader:
                idx = np.random.choice(1000, size=(x.shape[0],), p=p)
                t = torch.from_numpy(idx).long().to(device)
                loss = model(x.cuda(non_blocking=True), t).mean()
                loss.backward()
                optimizer.step()
            """,
            lines=(7,),
        ),
        Invalid(
            """
            # mixup masks drawn with NumPy in a function picked from a dict by the run's mode
            import numpy as np
            import torch

            def feat_mix(x, beta):
                rates = np.random.beta(beta, beta, size=(x.shape[0], 1))
                masks = np.random.random(size=tuple(x.shape)) > rates
                masks = torch.from_numpy(masks).to(x.device)
                return masks * x + ~masks * x.flip(0)

            for x, y in loader:
                x = x.cuda(non_blocking=True)
                mix = {"feat": feat_mix, "none": None}[mode]
                loss = loss_fn(model(mix(x, 0.5)), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # class weights handed in once, wrapped and moved again at every step
            import torch

            def fit_one_epoch(model, gen, optimizer, cls_weights, local_rank):
                for imgs, labels in gen:
                    weights = torch.from_numpy(cls_weights)
                    imgs, labels = imgs.cuda(local_rank), labels.cuda(local_rank)
                    weights = weights.cuda(local_rank)
                    loss = torch.nn.functional.cross_entropy(model(imgs), labels, weight=weights)
                    loss.backward()
                    optimizer.step()
            """,
            lines=(6,),
        ),
        Invalid(
            """
            # a PyG message-passing layer is a module: its forward runs every step
            import torch
            from torch_geometric.nn import MessagePassing

            class EdgeConv(MessagePassing):
                def forward(self, x, edge_index, edge_attr):
                    loop_attr = torch.zeros(x.size(0), 2)
                    loop_attr[:, 0] = 4
                    loop_attr = loop_attr.to(edge_attr.device).to(edge_attr.dtype)
                    return self.propagate(edge_index.cuda(), x=x, edge_attr=torch.cat((edge_attr, loop_attr), dim=0))
            """,
            lines=(7,),
        ),
        Invalid(
            """
            # a submodule's forward runs every step wherever the model is called (here: nowhere in sight)
            import torch
            from torch import nn

            def sample_points(xyz, npoint):
                return torch.zeros(xyz.size(0), npoint, dtype=torch.long).to(xyz.device)

            class SetAbstraction(nn.Module):
                def forward(self, xyz):
                    idx = sample_points(xyz, 512)
                    noise = (torch.rand(512, 3) * 0.01).to(xyz.device)
                    return xyz.cuda() + noise, idx
            """,
            findings=(
                ("6:12-6:77", "`torch.zeros(...)` is built on the CPU and copied to the GPU every step: "
                              "pass `device=` to the factory instead"),
                ("11:17-11:59", "`torch.rand(...)` and the math on it run on the CPU and the result is copied to the GPU every step: "
                                "pass `device=` to the factory instead"),
            ),
        ),
        Invalid(
            """
            # forward's own methods (``self.loss``) and a helper object it builds (its __init__) run every pass too
            import torch
            from torch import nn

            class CausalMask:
                def __init__(self, n, device):
                    self.mask = torch.ones(n, n, dtype=torch.bool).to(device).triu(1)

            class Net(nn.Module):
                def forward(self, x, label):
                    mask = CausalMask(x.size(1), x.device)
                    return self.loss(x.cuda(), label), mask

                def loss(self, x, label):
                    sizes = torch.zeros(10).long().to(x.device)
                    return x.sum() + sizes.sum()
            """,
            findings=(
                ("7:21-7:66", "`torch.ones(...)` is built on the CPU and copied to the GPU every step: "
                              "pass `device=` to the factory instead"),
                ("15:17-15:52", "`torch.zeros(...)` and the math on it run on the CPU and the result is copied to the GPU every step: "
                                "pass `device=` to the factory instead"),
            ),
        ),
        Invalid(
            """
            # a parameter that defaults to None and is tested for it: the training call leaves it out, so the body runs
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def forward(self, x, batch_size=None):
                    if batch_size is None:
                        h0 = torch.zeros(1, self.batch_size, self.hidden).cuda()
                    else:
                        h0 = torch.zeros(1, batch_size, self.hidden, device=x.device)
                    return self.lstm(x, h0)
            """,
            lines=(8,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if is_test_file(ctx.path, ctx.source):
            return
        seen: set[ast.Call] = set()
        forward = list(forward_calls(ctx))
        in_forward = set(forward)
        for call, region in ctx.hot.nodes(ast.Call):
            seen.add(call)
            loop = region.node if isinstance(region.node, (ast.For, ast.AsyncFor, ast.While)) else None
            report = self._judge(ctx, call, region.batch_names, forward=call in in_forward, loop=loop)
            if report is not None:
                yield report
        for call in forward:  # a module's forward pass runs per step wherever it is called
            if call not in seen:
                # (forward code's inputs live on the device: values written from them are no host data)
                report = self._judge(ctx, call, _data_parameters(ctx.enclosing_function(call)), host_data=(), forward=True)
                if report is not None:
                    yield report

    def _judge(
        self, ctx: RuleContext, call: ast.Call, batch_names: Collection[str], host_data: Collection[str] | None = None,
        forward: bool = False, loop: ast.AST | None = None,
    ) -> Report | None:
        """The report for one per-step call (``batch_names``: data that has to travel anyway; ``host_data``: the
        names of data on the host, ``batch_names`` unless given; ``forward``: the call is in a module's forward
        code, whose inputs are on the device and whose host values are its own), if any."""
        if method_name(call) in ("to", "cuda"):
            factory = call.func.value  # type: ignore[attr-defined]
            to_input = False
            if _target_device(ctx, call) is None:
                to_input = forward and _moved_to_input(ctx, call)  # ``.to(x)`` of an input
                if not to_input:  # (a device the fix cannot name: ``.cuda(local_rank)``)
                    return self._invariant(ctx, call, factory, batch_names, loop) if is_device_move(call, ctx) else None
            short = _factory(ctx, factory)
            if short is not None:
                return self._chained(ctx, call, factory, short, fixable=not to_input)
            legacy = legacy_created(ctx, factory)
            if legacy is None and forward:  # a forward pass's own host values (its inputs are the batch: TT301's)
                legacy = legacy_over_host_data(ctx, factory, parameter_names(ctx.enclosing_function(call)))
            elif legacy is None:  # a list the step writes out itself, of none of its data
                legacy = legacy_over_host_data(ctx, factory, batch_names, lists_only=True)
            if legacy is not None:
                return Report(
                    call,
                    f"`{legacy}(...)` makes a tensor on the CPU that is copied to the GPU every step: make it on the "
                    "device (`torch.zeros(..., device=...)`, `torch.tensor([...], device=...)`)",
                )
            return self._host_built(ctx, call, factory, batch_names, loop)
        if _factory(ctx, call) is not None:
            return self._two_statements(ctx, call, batch_names if host_data is None else host_data)
        return None

    def _chained(self, ctx: RuleContext, move: ast.Call, factory: ast.Call, short: str, fixable: bool = True) -> Report:
        return Report(
            move,
            f"`torch.{short}(...)` is built on the CPU and copied to the GPU every step: "
            "pass `device=` to the factory instead",
            fix=(lambda: _chained_fix(ctx, move, factory, short)) if fixable else None,
        )

    def _host_built(self, ctx: RuleContext, move: ast.Call, value: ast.expr, batch_names: Collection[str],
                    loop: ast.AST | None = None) -> Report | None:
        """Math on a fresh CPU tensor, a constant table an object set in ``__init__`` (:mod:`._tt305_constant_tables`),
        or a NumPy-made array, moved every step (:mod:`._tt305_host_built`); ``batch_names``: the step's data (or a
        forward's inputs), which has to travel anyway."""
        short = host_math_factory(ctx, value, batch_names)
        if short is not None:
            return Report(
                move,
                f"`torch.{short}(...)` and the math on it run on the CPU and the result is copied to the GPU every "
                "step: pass `device=` to the factory instead",
            )
        table = constant_table(ctx, value, move)
        if table is not None:
            return Report(
                move,
                f"the array `{table}`, set once in `__init__`, is wrapped on the CPU and copied to the GPU on every "
                "call: convert it to a device tensor once (a registered buffer, or `.to(device)` in `__init__`)",
            )
        invariant = self._invariant(ctx, move, value, batch_names, loop)
        if invariant is not None:
            return invariant
        maker = numpy_made(ctx, value, move, batch_names)
        if maker is not None:
            short_maker = maker.replace("numpy.", "np.", 1)
            return Report(
                move,
                f"an array made by `{short_maker}(...)` on the CPU is copied to the GPU every step: make it with "
                "torch on the device (`torch.rand(..., device=...)`, `torch.arange(..., device=...)`)",
            )
        return None

    @staticmethod
    def _invariant(ctx: RuleContext, move: ast.Call, value: ast.expr, batch_names: Collection[str],
                   loop: ast.AST | None) -> Report | None:
        """A host array no statement of the step ``loop`` assigns, wrapped and moved at every step
        (:func:`._tt305_host_built.loop_invariant_array`)."""
        found = loop_invariant_array(ctx, value, move, batch_names, loop) if loop is not None else None
        if found is None:
            return None
        name, wrapped = found
        where = "" if wrapped.lineno == move.lineno else f" on line {move.lineno}"
        return Report(
            wrapped if where else move,  # (a tensor made in one statement and moved in another: where it is made)
            f"`{name}` is the same array at every step, but it is wrapped on the CPU and copied to the GPU{where} each "
            "time: convert it to a device tensor once, before the loop",
        )

    def _two_statements(self, ctx: RuleContext, factory: ast.Call, host_data: Collection[str]) -> Report | None:
        assign = ctx.parents.get(factory)
        if not (isinstance(assign, ast.Assign) and assign.value is factory and len(assign.targets) == 1):
            return None
        target = assign.targets[0]
        if not isinstance(target, ast.Name):
            return None
        following, filled = _next_use(ctx, assign, target.id, host_data)
        moves = _moves_of(following, target.id) if following is not None else []
        if not moves or _target_device(ctx, moves[0]) is None:
            return None
        device, dtype = _target_device(ctx, moves[0])  # type: ignore[misc]
        short = _factory(ctx, factory) or ""
        keywords = _factory_keywords(factory, device, None)
        line = moves[0].lineno
        return Report(
            factory,
            f"`{target.id}` is built on the CPU and copied to the GPU on line {line} every step: "
            f"create it with `device={device}`",
            fix=(
                lambda: add_keywords_fix(
                    ctx, factory, keywords, f"Create with device={device}", _applicability(short)
                )
            )
            if keywords and dtype is None and not filled  # (values written in on the host would then go to the device)
            else None,
        )
