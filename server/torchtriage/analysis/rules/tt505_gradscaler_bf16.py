"""TT505: ``GradScaler`` used with bfloat16 autocast."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ..syntax import keyword_value
from .base import Invalid, Report, Rule, RuleContext, Valid

_AUTOCAST = (
    "torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast",
    "torch.amp.autocast_mode.autocast",
)
_SCALERS = (
    "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.grad_scaler.GradScaler",
)


_DTYPES = {"torch.bfloat16": "bfloat16", "torch.float16": "float16", "torch.half": "float16"}


def _autocast_dtypes(ctx: RuleContext) -> set[str]:
    """The dtypes autocast runs in across the file: 'bfloat16', 'float16', or 'unknown'."""
    found: set[str] = set()
    for node in ctx.nodes_of(ast.Call):
        qualname = ctx.qualname(node.func) if isinstance(node, ast.Call) else None
        if qualname not in _AUTOCAST:
            continue
        assert isinstance(node, ast.Call)
        dtype = keyword_value(node, "dtype")
        if dtype is None and len(node.args) >= 2:
            dtype = node.args[1]  # autocast(device_type, dtype) / cuda.amp.autocast(enabled, dtype)
        if dtype is None:
            found.add("bfloat16" if _device_of(node, qualname) == "cpu" else "float16")
        else:
            found.add(_dtype_name(ctx, dtype))
    return found


def _device_of(call: ast.Call, qualname: str) -> str:
    if qualname.startswith("torch.cpu."):
        return "cpu"
    device = keyword_value(call, "device_type")
    if device is None and call.args and not qualname.startswith("torch.cuda."):
        device = call.args[0]
    return device.value if isinstance(device, ast.Constant) and isinstance(device.value, str) else "cuda"


def _dtype_name(ctx: RuleContext, node: ast.AST) -> str:
    """``torch.bfloat16`` directly, or a name only ever assigned that dtype."""
    direct = _DTYPES.get(ctx.qualname(node) or "")
    if direct is not None:
        return direct
    if isinstance(node, ast.Name):
        values = [
            _DTYPES.get(ctx.qualname(assign.value) or "", "unknown")
            for assign in ctx.nodes_of(ast.Assign)
            if isinstance(assign, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == node.id for t in assign.targets)
        ]
        if values and len(set(values)) == 1:
            return values[0]
    return "unknown"


class GradScalerWithBf16(Rule):
    code = "TT505"
    name = "gradscaler-with-bf16"
    severity = Severity.INFO
    category = "compute"
    requires_cuda = True
    summary = "A `GradScaler` is used while autocast runs in bfloat16, which does not need loss scaling."
    why = """
        Loss scaling exists because float16 has a narrow exponent range and small
        gradients underflow to zero. bfloat16 keeps float32's exponent range, so
        with `dtype=torch.bfloat16` the scaler only adds work every step:
        an extra multiply of the loss, an unscale pass over every gradient and
        an inf/nan check that reads a flag back to the host. Guides recommend
        bf16 autocast without a scaler on Ampere and newer GPUs.
    """
    fix_description = "Drop the GradScaler (call `loss.backward()` and `optimizer.step()` directly), or create it with `enabled=False`."
    fix_applicability = None
    example_bad = """
        scaler = torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        scaler.scale(loss).backward()
    """
    example_good = """
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        loss.backward()
    """
    VALID = (
        Valid(
            """
            import torch
            scaler = torch.cuda.amp.GradScaler()
            for x, y in loader:
                with torch.autocast("cuda"):       # float16 by default: the scaler is needed
                    loss = model(x.cuda())
                scaler.scale(loss).backward()
            """
        ),
        Valid(
            """
            import torch
            ptdtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
            scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
            ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)
            """
        ),
        Valid(
            """
            import torch
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x.cuda())
                loss.backward()
            """
        ),
        Valid(
            """
            import torch
            # nanoGPT-style: the dtype is chosen at run time and the scaler follows it
            dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
            ptdtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
            ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)
            scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
            """
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda"):                      # float16 by default on CUDA
                loss = model(x.cuda()).mean()
            with torch.autocast("cpu", dtype=torch.bfloat16):  # a CPU eval pass
                preds = model(x)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x.cuda())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
            lines=(2,),
        ),
        Invalid(
            """
            from torch.cuda.amp import GradScaler, autocast
            import torch
            scaler = GradScaler()
            with autocast(dtype=torch.bfloat16):
                out = model(x.cuda())
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import torch as T
            amp_ctx = T.autocast(device_type="cuda", dtype=T.bfloat16)
            grad_scaler = T.cuda.amp.GradScaler(init_scale=2.0**16)
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import torch
            from torch.amp import GradScaler
            AMP_DTYPE = torch.bfloat16
            scaler = GradScaler("cuda")
            for x, y in loader:
                with torch.autocast("cuda", AMP_DTYPE):
                    loss = criterion(model(x.cuda()), y.cuda())
                scaler.scale(loss).backward()
            """,
            lines=(4,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        scalers = [
            node
            for node in ctx.nodes_of(ast.Call)
            if isinstance(node, ast.Call) and (ctx.qualname(node.func) or "") in _SCALERS
        ]
        if not scalers or _autocast_dtypes(ctx) != {"bfloat16"}:
            return
        for scaler in scalers:
            if keyword_value(scaler, "enabled") is not None:
                continue  # the author already conditions it on the dtype
            yield Report(
                scaler,
                "GradScaler with bfloat16 autocast only adds work (bf16 has fp32's range): drop the scaler",
            )
