"""TT301: batch moved to the GPU without ``non_blocking=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..fixes import add_keywords_fix
from ..hotloops.finder import HotRegion
from ..incremental.memo import subtree_memo
from ..hotloops.step_markers import LOOP_NODES, is_batch_fetch, is_fetched_batch, is_model_call, names_outside_shapes
from ..syntax import bound_name, keyword_value
from ._bindings import name_stores
from ._legacy_tensors import gathered_rows, replay_sample_calls, wrapped_batch
from ._helpers import is_batch_expression, is_device_move, method_name, names_in
from ._other_devices import on_other_accelerator
from ._placed_batches import computed_from_moved, fetched_from_placed, moved_before, placed_loader_loop
from ._tt305_constant_tables import constant_table
from ._tt305_host_built import numpy_made
from ..parsing import LEGACY_ASYNC
from .base import Invalid, Report, Rule, RuleContext, Valid


def _last_made(ctx: RuleContext, receiver: ast.AST, call: ast.Call) -> ast.Call | None:
    """The call the receiver's name was last assigned from, earlier in the same function
    (``batch_y = batch_y.float().to(device)``, ``loc_t = torch.Tensor(n, 4)``), when it was one."""
    while isinstance(receiver, (ast.Subscript, ast.Attribute)) or (
        isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)
    ):
        receiver = receiver.value if not isinstance(receiver, ast.Call) else receiver.func.value  # type: ignore[attr-defined]
    if not isinstance(receiver, ast.Name):
        return None
    scope = ctx.enclosing_function(call) or ctx.tree
    own = ctx.enclosing_statement(call)
    latest: ast.Name | None = None  # the name's last binding before the call (a plain assignment, an unpacking, a loop target)
    for node in name_stores(ctx, receiver.id, scope):
        if ((node.lineno, node.col_offset) < (call.lineno, call.col_offset)
                and ctx.enclosing_statement(node) is not own
                and (latest is None or (node.lineno, node.col_offset) > (latest.lineno, latest.col_offset))):
            latest = node
    statement = ctx.enclosing_statement(latest) if latest is not None else None
    if not (isinstance(statement, ast.Assign) and latest in statement.targets and isinstance(statement.value, ast.Call)):
        return None
    value = statement.value
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not is_device_move(value, ctx) \
            and isinstance(value.func.value, ast.Call) and method_name(value) in ("float", "long", "half", "contiguous", "detach"):
        value = value.func.value  # ``x.to(d).float()``: still the move
    return value if isinstance(value, ast.Call) else None


def _filled_in_place(ctx: RuleContext, made: ast.Call, call: ast.Call) -> bool:
    """``zeros.scatter_(1, labels, 1)`` where ``zeros`` was made by a torch factory in the step: a new tensor
    filled in on the host (TT305's case), not the batch, though the batch says where to write."""
    func = made.func
    if not (isinstance(func, ast.Attribute) and func.attr.endswith("_") and isinstance(func.value, ast.Name)):
        return False
    factory = _last_made(ctx, func.value, call)
    return factory is not None and (ctx.qualname(factory.func) or "").startswith("torch.") and not is_device_move(factory, ctx)


def _model_outputs(ctx: RuleContext, region: HotRegion) -> set[str]:
    """Names bound to what the model returned (and values computed from it) in one region.

    Outputs already live on the model's device; moving them is not the
    host-to-device batch copy that pinned memory and non_blocking speed up.
    """
    key = ("tt301-model-outputs", id(region))
    if key not in ctx.memo:
        assigns = [node for node, owner in ctx.hot.nodes(ast.Assign) if owner is region]
        calls_model = {node: _calls_model(node.value) for node in assigns}
        outputs: set[str] = set()
        for _ in range(2):  # two passes reach `out = model(x); pred = out.argmax()` in any order
            for node in assigns:
                if calls_model[node] or names_in(node.value) & outputs:
                    for target in node.targets:
                        outputs |= names_in(target)
        ctx.memo[key] = outputs
    return ctx.memo[key]  # type: ignore[return-value]


def _model_output_at(ctx: RuleContext, region: HotRegion, receiver: ast.AST, call: ast.Call) -> bool:
    """Whether the moved value is the model's output there.  A loop variable the step rebinds to the
    model's output only after this copy (``imgs = imgs.to(d)`` ... ``imgs = encoder(imgs)``) is still
    the batch at the copy: the loop binds it afresh each step."""
    outputs = _model_outputs(ctx, region)
    hit = names_in(receiver) & outputs
    if not hit or not isinstance(region.node, (ast.For, ast.AsyncFor)):
        return bool(hit)
    rebound = names_in(region.node.target)
    for name in hit:
        if name not in rebound:
            return True
        for node, owner in ctx.hot.nodes(ast.Assign):
            if (owner is region and node.lineno < call.lineno and name in set().union(*(names_in(t) for t in node.targets))
                    and (_calls_model(node.value) or names_in(node.value) & outputs)):
                return True
    return False


def _calls_model(value: ast.AST) -> bool:
    """Whether an assigned value calls a model (kept on the node, see ..memo)."""
    return subtree_memo(value, "tt301-calls-model", lambda: any(is_model_call(n, set()) for n in ast.walk(value)))


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _counter_slice(receiver: ast.AST, region) -> bool:  # type: ignore[no-untyped-def]
    """``corpus[:, i:i + 64]`` in ``for i in range(...)``: a batch sliced from a big host tensor
    by the step counter."""
    if not isinstance(receiver, ast.Subscript) or not region.counter_names:
        return False
    sliced = receiver.slice
    parts = sliced.elts if isinstance(sliced, ast.Tuple) else [sliced]
    return any(isinstance(p, ast.Slice) and names_in(p) & region.counter_names for p in parts)


def _comprehension_batch_names(ctx: RuleContext, call: ast.AST, region) -> set[str]:  # type: ignore[no-untyped-def]
    """Names a comprehension around ``call`` binds from the batch, outermost first:
    ``[{k: v.to(d) for k, v in t.items()} for t in targets]`` binds ``t`` then ``k, v``; a batch fetched
    by the comprehension itself too (``[x.to(d) for x, y in next(iterator)]``)."""
    comps = []
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, ast.stmt):
            break
        if isinstance(ancestor, _COMPREHENSIONS):
            comps.append(ancestor)
    batch = set(region.batch_names)
    found: set[str] = set()
    for comp in reversed(comps):
        for generator in comp.generators:
            if names_in(generator.iter) & batch or is_batch_fetch(generator.iter):
                bound = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
                batch |= bound
                found |= bound
    return found


_JOINERS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"})


def _joins_batch(ctx: RuleContext, receiver: ast.AST, batch: set[str], moved: set[str]) -> bool:
    """``torch.cat([batch_y[:, :n], dec_inp], 1).float().to(d)``, ``torch.stack(inputs_lst).to(d)``: batch data
    joined on the host, padding and all, then copied once: the batch's copy, not a tensor made in the step
    (unless the joined batch data was moved earlier in the step: then the join is on the device already)."""
    return any(
        isinstance(node, ast.Call) and (ctx.qualname(node.func) or "").startswith("torch.")
        and (ctx.qualname(node.func) or "").rsplit(".", 1)[-1] in _JOINERS
        and any((names_outside_shapes(arg) & batch) - moved for arg in node.args)
        for node in ast.walk(receiver)
    )


def _tokenized(receiver: ast.AST) -> bool:
    """``self.tokenizer(text, return_tensors="pt").to(device)``: a tokenizer's output, made on the host from the
    step's text by necessity (a few token ids, not the batch's tensors)."""
    if not isinstance(receiver, ast.Call):
        return False
    name = bound_name(receiver.func) or ""
    return "tokenizer" in name.lower() or name in ("tokenize", "encode_plus", "batch_encode_plus")


def _on_device_mismatch(ctx: RuleContext, call: ast.Call) -> bool:
    """Under an ``if`` that compares devices (``a.device != b.device``) in the same function: a copy made
    the first time only, after which both sides agree."""
    child: ast.AST = call
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(ancestor, ast.If) and child is not ancestor.test and any(child is s for s in ancestor.body):
            if any(isinstance(n, ast.Compare) and any(isinstance(a, ast.Attribute) and a.attr == "device" for a in ast.walk(n))
                   for n in ast.walk(ancestor.test)):
                return True
        child = ancestor
    return False


class NonBlockingTransfer(Rule):
    code = "TT301"
    name = "blocking-host-to-device-copy"
    severity = Severity.WARNING
    category = "data_loading"
    requires_cuda = True
    summary = "A batch tensor is copied to the GPU every step with a blocking `.to(device)` / `.cuda()`."
    why = """
        A blocking host-to-device copy makes the CPU wait until the copy is done
        before it can queue the next kernels, so the GPU idles between steps.
        With `pin_memory=True` in the DataLoader and `non_blocking=True` on the
        copy, the transfer overlaps with compute that is already queued. Data
        loading and transfers are the first thing guides tell you to check: in
        first profiles 20-30 % of teams are loader-bound, with the GPU idle
        30-50 % of each step.
    """
    fix_description = "Add `non_blocking=True` to the copy (and `pin_memory=True` to the DataLoader)."
    fix_applicability = Applicability.SAFE
    example_bad = """
        for x, y in loader:
            x, y = x.to(device), y.to(device)
    """
    example_good = """
        for x, y in loader:  # DataLoader(..., pin_memory=True)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    """
    VALID = (
        Valid(
            """
            # a mask NumPy draws in the step is TT305's (made on the host), not a batch copy
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
        ),
        Valid(
            """
            # the noise schedule's variance, or the model's own in the other branch, handed to the helper that indexes it
            import numpy as np
            import torch

            class Diffusion:
                def __init__(self, betas, learned):
                    self.posterior_variance = np.cumprod(1.0 - betas)
                    self.learned = learned

                def p_mean_variance(self, model, x, t):
                    out = model(x, t)
                    if self.learned:
                        variance = torch.exp(out)
                    else:
                        variance = self.posterior_variance
                        variance = _extract(variance, t, x.shape)
                    return out, variance

            def _extract(arr, timesteps, shape):
                return torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()

            diffusion = Diffusion(np.linspace(1e-4, 0.02, 1000), learned=False)
            for x, _ in loader:
                x = x.cuda(non_blocking=True)
                t = torch.randint(0, 1000, (x.shape[0],), device="cuda")
                out, variance = diffusion.p_mean_variance(model, x, t)
                loss = (out * variance).mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # Accelerate places every batch of a prepared loader on the device: the .to() copies nothing
            import torch
            from accelerate import Accelerator

            accelerator = Accelerator()
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            device = torch.device("cuda")
            for texts, lengths in loader:
                texts = texts.to(device)
                loss = model(texts, lengths.to(device)).mean()
                accelerator.backward(loss)
                optimizer.step()
            """
        ),
        Valid(
            """
            # a helper's result computed from batch tensors the step already moved is on the device
            import torch

            def length_to_mask(lengths):
                return torch.arange(lengths.max(), device=lengths.device)[None] < lengths[:, None]

            for batch in loader:
                batch = [b.to("cuda", non_blocking=True) for b in batch]
                texts, lengths = batch
                mask = length_to_mask(lengths // 2).to("cuda")
                loss = model(texts, mask).mean()
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # the CUDA branch pins and copies without blocking; the copy in its else runs off CUDA (CPU, MPS)
            import numpy as np
            import torch

            def get_batch(split):
                ix = torch.randint(len(data) - block_size, (batch_size,))
                x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
                y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
                if device_type == "cuda":
                    x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
                else:
                    x, y = x.to(device), y.to(device)
                return x, y

            for step in range(max_iters):
                X, Y = get_batch("train")
                model(X, Y).backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a prefetcher hands the batch over on the GPU: .to(self.data_type) casts it there, no copy
            import torch

            class Trainer:
                def __init__(self, fp16):
                    self.data_type = torch.float16 if fp16 else torch.float32
                    self.model = torch.nn.Linear(4, 4).cuda()

                def train(self):
                    for it in range(self.max_iter):
                        inps, targets = self.prefetcher.next()
                        inps = inps.to(self.data_type)
                        loss = self.model(inps, targets)
                        loss.backward()
                        self.optimizer.step()
            """
        ),
        Valid(
            """
            # the step's captions tokenized on the host: a few token ids the model needs on the device
            import torch
            for images, captions in loader:
                images = images.cuda(non_blocking=True)
                text = tokenizer(captions, padding="longest", return_tensors="pt").to("cuda")
                loss = model(images, text.input_ids)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a metric's running totals follow the batch's device once: later calls find them there
            import torch

            class Metric:
                def __init__(self, n):
                    self.total_inter = torch.zeros(n)

                def update(self, inter):
                    if self.total_inter.device != inter.device:
                        self.total_inter = self.total_inter.to(inter.device)
                    self.total_inter += inter

            metric = Metric(21)
            for x, y in loader:
                out = model(x.cuda(non_blocking=True))
                metric.update(intersection(out, y.cuda(non_blocking=True)))
            """
        ),
        Valid(
            """
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                x = x.to(device, non_blocking=True)
                loss = model(x).sum(); loss.backward()
            """
        ),
        Valid(
            """
            # CPU-only script: no CUDA, nothing to overlap
            for x, y in loader:
                x = x.to("cpu")
                loss = model(x).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            model = model.cuda()          # once, not per step
            for x, y in loader:
                x = x.to(device, non_blocking=True)
                loss = model(x).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            model.cuda()
            for x, y in loader:
                x = x.to(torch.float16, non_blocking=True)  # dtype conversion only
                loss = model(x).sum(); loss.backward()
            """
        ),
        Valid(
            """
            import torch
            with torch.no_grad():
                for data, target in test_loader:
                    data = data.to("cuda", non_blocking=True)
                    pred = model(data).argmax(dim=1)
                    pred = pred.to(device)          # a model output, already on the device
                    x = data.to(self_dtype)         # a dtype cast, not a copy
                    extra = torch.tensor(1.0).to("cuda")   # made in the step: TT305's case
            """
        ),
        Valid(
            """
            # moved once with non_blocking; the second .to() is a no-op; a tensor made in the step is TT305's case
            import torch
            for x, y in loader:
                y = y.float().to(device, non_blocking=True)
                target = y[:, -horizon:].to(device)
                mask = torch.zeros(len(x), 4)
                mask = mask.cuda()
                loss = criterion(model(x.to(device, non_blocking=True)), target, mask)
                loss.backward()
            """
        ),
        Valid(
            """
            # arrays the step computes on the host from the batch's shape: made, not handed over (TT305's case)
            import numpy as np
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                x = x.to(device, non_blocking=True)
                pos = np.tile(np.arange(x.shape[-1]), (x.shape[0], 1))
                pos = torch.from_numpy(pos).to(device)
                mask = torch.from_numpy(np.random.choice(2, x.shape, p=[0.1, 0.9])).to(device)
                loss = model(x, pos, mask).sum(); loss.backward()
            """
        ),
        Valid(
            """
            # a table built from the batch's sizes only is host math moved (TT305's case), not the batch
            import numpy as np
            import torch

            def sinusoid_table(n, d):
                return torch.FloatTensor(np.zeros((n, d)))

            for x, y in loader:
                x = x.cuda(non_blocking=True)
                pos = sinusoid_table(x.shape[1], 64)[: x.size(1)].unsqueeze(0).to(x.device)
                loss = model(x + pos).mean()
                loss.backward()
            """
        ),
        Valid(
            """
            # the batch part moved first: the decoder input joined from it is on the device already
            import torch
            device = torch.device("cuda")

            for batch_x, batch_y in loader:
                batch_x = batch_x.float().to(device, non_blocking=True)
                batch_y = batch_y.float().to(device, non_blocking=True)
                dec_inp = torch.zeros_like(batch_y[:, -pred_len:, :]).float()
                dec_inp = torch.cat([batch_y[:, :label_len, :], dec_inp], dim=1).float().to(device)
                loss = criterion(model(batch_x, dec_inp), batch_y)
                loss.backward()
            """
        ),
        Valid(
            """
            # fetched from a cycle over a loader accelerate places on the device: the copy is a no-op
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator()
            device = accelerator.device
            dl = accelerator.prepare(torch.utils.data.DataLoader(ds, batch_size=32, pin_memory=True, num_workers=4))
            dl = cycle(dl)
            for step in range(100000):
                data = next(dl).to(device)
                loss = model(data)
                accelerator.backward(loss); optimizer.step()
            """,
            device="cuda",
        ),
    )
    INVALID = (
        Invalid(
            """
            # a prepared loader's batch holds host arrays too: wrapping one in a tensor and moving it is a real copy
            import torch
            from accelerate import Accelerator

            accelerator = Accelerator()
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for waves, mels in loader:
                clips = []
                for i in range(len(waves)):
                    clip = waves[i][:4800]
                    clips.append(torch.from_numpy(clip).to("cuda"))
                loss = model(mels, torch.stack(clips)).mean()
                accelerator.backward(loss)
                optimizer.step()
            """,
            lines=(11,),
        ),
        Invalid(
            """
            # a clip of each sample's waveform, sliced from the host batch in a loop of the step and moved
            import torch
            for waves, mels in loader:
                mels = mels.to("cuda", non_blocking=True)
                clips = []
                for i in range(len(waves)):
                    clip = waves[i][0:4800]
                    clips.append(torch.from_numpy(clip).to("cuda"))
                loss = model(mels, torch.stack(clips)).mean()
                loss.backward()
                optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # the step's batches fetched and moved in one comprehension
            import torch
            iterator = iter(loader)
            for step in range(n_steps):
                minibatches = [(x.to("cuda"), y.to("cuda")) for x, y in next(iterator)]
                loss = model(minibatches).mean()
                loss.backward()
                optimizer.step()
            """,
            lines=(5, 5),
        ),
        Invalid(
            """
            # a replay buffer's sample(): rows gathered from the host store and moved, once per update of its agent
            import numpy as np
            import torch

            class ReplayBuffer:
                def __init__(self, size):
                    self.memory = []
                    self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

                def add(self, state, reward):
                    self.memory.append((state, reward))

                def sample(self, batch_size):
                    rows = [self.memory[i] for i in np.random.randint(0, len(self.memory), batch_size)]
                    return self._to_tensors(rows)

                def _to_tensors(self, rows):
                    states = torch.from_numpy(np.vstack([r[0] for r in rows])).float().to(self.device)
                    return states, torch.tensor([r[1] for r in rows], device=self.device)
            """,
            lines=(18,),
        ),
        Invalid(
            """
            # a replay buffer's rows gathered by index and copied in every update
            import numpy as np
            import torch
            device = torch.device("cuda")

            class ReplayBuffer:
                def __init__(self, size):
                    self.state = np.zeros((size, 8))
                    self.size = size

                def sample(self, batch_size):
                    ind = np.random.randint(0, self.size, size=batch_size)
                    return torch.FloatTensor(self.state[ind]).to(device)

            replay_buffer = ReplayBuffer(100000)
            for t in range(1000000):
                state = replay_buffer.sample(256)
                loss = critic(state).mean()
                loss.backward()
                optimizer.step()
            """,
            lines=(13,),
        ),
        Invalid(
            """
            # a loader thread puts batches on a queue; the step loop takes them off it
            import torch
            device = torch.device("cuda")
            while True:
                inputs, targets = queue.get()
                if inputs.shape[0] == 0:
                    break
                inputs = inputs.to(device)
                loss = criterion(model(inputs), targets.to(device, non_blocking=True))
                loss.backward()
                optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # host arrays of the step's batch wrapped and copied (a replay batch, a sampled batch of item ids)
            import numpy as np
            import torch
            device = torch.device("cuda")
            for states, actions in loader:
                states = torch.FloatTensor(states).to(device)
                actions = torch.from_numpy(actions).long().to(device)
                loss = model(states, actions).sum(); loss.backward()
            """,
            lines=(6, 7),
            fixed="""
            # host arrays of the step's batch wrapped and copied (a replay batch, a sampled batch of item ids)
            import numpy as np
            import torch
            device = torch.device("cuda")
            for states, actions in loader:
                states = torch.FloatTensor(states).to(device, non_blocking=True)
                actions = torch.from_numpy(actions).long().to(device, non_blocking=True)
                loss = model(states, actions).sum(); loss.backward()
            """,
        ),
        Invalid(
            """
            # the loop variable becomes the encoder's output only after its copy
            import torch
            device = torch.device("cuda")
            for i, (imgs, caps) in enumerate(train_loader):
                imgs = imgs.to(device)
                imgs = encoder(imgs)
                loss = criterion(decoder(imgs), caps.to(device, non_blocking=True))
                loss.backward()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                x, y = x.to(device), y.cuda()
                loss = model(x).sum(); loss.backward()
            """,
            lines=(4, 4),
            fixed="""
            import torch
            device = torch.device("cuda")
            for x, y in loader:
                x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)
                loss = model(x).sum(); loss.backward()
            """,
        ),
        Invalid(
            """
            def train_step(model, batch):
                images = batch["image"].to("cuda")
                loss = model(images).mean()
                loss.backward()

            for batch in train_loader:
                train_step(model, batch)
            """,
            lines=(2,),
        ),
        Invalid(
            """
            # ``if args.no_cuda:`` says the opposite of a CUDA test: its else is the CUDA copy
            import torch
            for x, y in loader:
                if args.no_cuda:
                    x, y = x.float(), y.float()
                else:
                    x, y = x.cuda(), y.cuda()
                loss = model(x, y).sum()
                loss.backward()
            """,
            lines=(7, 7),
        ),
        Invalid(
            """
            # a hand-written loader's next_batch() hands out the step's batch: what it returns is batch data
            import numpy as np
            import torch

            class TokenLoader:
                def __init__(self, tokens, B, T):
                    self.tokens, self.B, self.T, self.pos = tokens, B, T, 0

                def next_batch(self):
                    buf = torch.tensor(self.tokens[self.pos:self.pos + self.B * self.T + 1].astype(np.int64))
                    x, y = buf[:-1].view(self.B, self.T), buf[1:].view(self.B, self.T)
                    self.pos += self.B * self.T
                    return x.cuda(), y.cuda()

            loader = TokenLoader(np.arange(10000), 4, 64)
            for step in range(1000):
                x, y = loader.next_batch()
                model(x, y).backward()
                optimizer.step()
            """,
            lines=(13, 13),
        ),
        Invalid(
            """
            # the batch reaches a helper through ``*inputs``; ``if i == 0`` counts the inputs, not the steps
            def to_gpu(*inputs):
                moved = []
                for i, tensor in enumerate(inputs):
                    if i == 0:
                        moved.append(tensor.to("cuda"))
                    else:
                        moved.append(tensor.to("cuda").long())
                return moved

            for images, labels in train_loader:
                images, labels = to_gpu(images, labels)
                loss = model(images).mean()
                loss.backward()
            """,
            lines=(6, 8),
        ),
        Invalid(
            """
            # the branch taken off the other accelerators is the CUDA copy; the XPU and MPS copies are not
            import torch
            for batch in train_loader:
                for key in batch:
                    if is_xpu_available():
                        batch[key] = batch[key].to(torch.device(f"xpu:{rank}"))
                    elif not use_mps:
                        batch[key] = batch[key].to("cuda:0")
                    else:
                        batch[key] = batch[key].to("mps")
                loss = model(**batch).loss
                loss.backward()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            import torch
            cuda = torch.cuda.is_available()
            Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
            for imgs, _ in loader:
                real = imgs.type(Tensor)  # the legacy move: a CUDA tensor type
                loss = model(real).mean()
                loss.backward()
            """,
            findings=(("5:12-5:29", "Blocking host-to-device copy of batch data every step: add `non_blocking=True` to `.type(...)`"),),
            fixed="""
            import torch
            cuda = torch.cuda.is_available()
            Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
            for imgs, _ in loader:
                real = imgs.type(Tensor, non_blocking=True)  # the legacy move: a CUDA tensor type
                loss = model(real).mean()
                loss.backward()
            """,
        ),
        Invalid(
            """
            # the batch spread into a helper of the trainer that moves each part
            import torch

            class Trainer:
                def cuda(self, *args):
                    return (item.to("cuda") for item in args)

                def fit(self, loader):
                    for items in loader:
                        images, masks = self.cuda(*items)
                        loss = self.model(images, masks).mean()
                        loss.backward()
                        self.optimizer.step()
            """,
            lines=(6,),
        ),
        Invalid(
            """
            # batch data joined on the host with its padding, then copied: the batch's copy
            import torch
            device = torch.device("cuda")

            for batch_x, batch_y in loader:
                batch_x = batch_x.float().to(device, non_blocking=True)
                dec_inp = torch.zeros([batch_y.shape[0], pred_len, batch_y.shape[-1]]).float()
                dec_inp = torch.cat([batch_y[:, :label_len, :], dec_inp], dim=1).float().to(device)
                loss = criterion(model(batch_x, dec_inp), batch_y.to(device, non_blocking=True))
                loss.backward()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            # the batch moved as it is fetched from an iterator over the loader
            import torch
            device = torch.device("cuda")
            content_iter = iter(torch.utils.data.DataLoader(content_set, batch_size=8, num_workers=16))
            for i in range(160000):
                content_images = next(content_iter).to(device)
                loss = network(content_images)
                optimizer.zero_grad(); loss.backward(); optimizer.step()
            """,
            lines=(6,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        seen: set[ast.Call] = set()
        for call, region in ctx.hot.nodes(ast.Call):
            seen.add(call)
            if not is_device_move(call, ctx) or keyword_value(call, "non_blocking") is not None \
                    or keyword_value(call, LEGACY_ASYNC) is not None:  # ``async=True``: torch 0.3's non_blocking
                continue
            receiver = call.func.value  # type: ignore[attr-defined]
            if constant_table(ctx, receiver, call) is not None or numpy_made(ctx, receiver, call, region.batch_names):
                continue  # an array the object set in ``__init__``, or one NumPy makes in the step: TT305's case
            wrapped = wrapped_batch(ctx, receiver, call)  # ``torch.from_numpy(batch)``, ``torch.FloatTensor(batch)``
            gathered = wrapped is not None and gathered_rows(ctx, wrapped)  # ``FloatTensor(self.state[ind])``
            if wrapped is not None and (gathered or is_batch_expression(wrapped, region)):
                receiver = wrapped
            fetched = is_fetched_batch(call)  # ``next(it).to(device)``: the batch moved as it is fetched
            if fetched and fetched_from_placed(ctx, call):
                continue  # from an iterator over a loader accelerate / Fabric places: on the device already
            batch_receiver = (
                gathered
                or fetched
                or is_batch_expression(receiver, region)
                or bool(names_in(receiver) & _comprehension_batch_names(ctx, call, region))
                or _counter_slice(receiver, region)
            )
            if not batch_receiver or _model_output_at(ctx, region, receiver, call) or _tokenized(receiver):
                continue
            data = region.batch_names | _comprehension_batch_names(ctx, call, region)
            if not gathered and not fetched and not _counter_slice(receiver, region) and not names_outside_shapes(receiver) & data:
                continue  # made from the batch's sizes only (``table(x.shape[1])[: x.size(1)].to(x.device)``): TT305's case
            if receiver is not wrapped and (placed_loader_loop(ctx, region) or computed_from_moved(ctx, receiver, region)):
                continue  # on the device already: placed by accelerate / Fabric, or computed from tensors the step moved
            if receiver is not wrapped and any(isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").startswith("torch.")
                                               for n in ast.walk(receiver)) \
                    and not (isinstance(region.node, LOOP_NODES)  # (a function reached per step gets device tensors)
                             and _joins_batch(ctx, receiver, data, moved_before(ctx, region, call.lineno))):
                continue  # a tensor made in the step (torch.tensor(r).to(d)) is TT305's case
            made = _last_made(ctx, receiver, call)
            if made is not None and (is_device_move(made, ctx) or (ctx.qualname(made.func) or "").startswith("torch.")
                                     or _filled_in_place(ctx, made, call)):
                continue  # moved earlier in the step (``y = y.to(d)`` ... ``y[:, -n:].to(d)``: a no-op), or made in it (TT305)
            if on_other_accelerator(ctx, call):
                continue  # a copy to XPU / MPS / NPU..., or a branch taken only there: not a CUDA copy
            if _on_device_mismatch(ctx, call):
                continue  # ``if self.total.device != x.device: self.total = self.total.to(x.device)``: once
            pageable = (" (the tensor is made from a host array every step, so it is not pinned: "
                        "`.pin_memory()` before the copy lets it overlap)") if receiver is wrapped else ""
            yield self._report(ctx, call, pageable)
        for call in replay_sample_calls(ctx):  # a replay buffer's sample(): once per update, wherever it is called
            if call in seen or not is_device_move(call, ctx) or keyword_value(call, "non_blocking") is not None:
                continue
            wrapped = wrapped_batch(ctx, call.func.value, call)  # type: ignore[attr-defined]
            if wrapped is not None and gathered_rows(ctx, wrapped) and not on_other_accelerator(ctx, call):
                yield self._report(ctx, call, " (the tensor is made from a host array every step, so it is not pinned: "
                                              "`.pin_memory()` before the copy lets it overlap)")

    @staticmethod
    def _report(ctx: RuleContext, call: ast.Call, pageable: str) -> Report:
        what = {"cuda": "`.cuda()`", "type": "`.type(...)`"}.get(method_name(call) or "", "`.to(...)`")
        return Report(
            call,
            f"Blocking host-to-device copy of batch data every step: add `non_blocking=True` to {what}{pageable}",
            fix=lambda call=call: add_keywords_fix(
                ctx, call, [("non_blocking", "True")], "Add non_blocking=True", Applicability.SAFE
            ),
        )
