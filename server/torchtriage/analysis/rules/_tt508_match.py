"""TT508's matcher: recognise hand-written attention, ``softmax(q @ kᵀ · scale [+ mask]) [dropout] @ v``.

The matcher starts at a matmul (``a @ v``, ``torch.matmul``, ``torch.bmm``,
``a.matmul(v)``, a two-operand ``torch.einsum``) and walks its left operand
*backwards*: through local names (the nearest plain assignment before the use,
in the same or an enclosing block), dropout and dtype casts, to a torch
``softmax`` over the last dimension (or an ``nn.Softmax`` module the class
builds, and ``self.id(x)`` hook points that are an ``nn.Identity``); then through
the softmax's input: mask (``masked_fill`` / ``+ mask``), scale (``* s`` / ``/
s``), names again, to the scores matmul ``q @ k.transpose(-2, -1)`` (``.mT``,
``torch.transpose``, ``permute`` swapping the last two dims, ``bmm`` with
``transpose(1, 2)``, or an einsum contracting the feature dims, last or, channels
first, before the positions).  A U-Net's block written with ``bmm`` is read too:
``bmm(q, k)`` with q permuted to ``(b, n, c)`` and k viewed ``(b, c, n)``, and a
final ``bmm(v, w.permute(0, 2, 1))`` with the weights on the right (channels
first: found, no rewrite).  Anything else on the way ends the walk: a
classification softmax never reaches a matmul, an MLP's matmul chain never
passes a softmax.

The result says how exactly the shape was recognised: ``unsafe`` lists what a
rewrite to ``scaled_dot_product_attention`` would change (dropout's random
stream, a finite fill value, an additive mask of unknown dtype, an upcast, a
transpose whose rank is unknown); the rule turns it into edits.  The result type
and the walk through names are in :mod:`._tt508_attention`, the einsum reading in
:mod:`._tt508_einsum`.
"""

from __future__ import annotations

import ast

from .base import RuleContext
from ..syntax import keyword_value
from ._tt508_attention import Attention, NameWalk, is_name
from ._tt508_einsum import einsum_layout, einsum_spec

SOFTMAX = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
MATMUL = frozenset({"torch.matmul", "torch.bmm"})
DROPOUT = frozenset({"torch.nn.functional.dropout", "torch.dropout"})
EINSUM = "torch.einsum"
NEG_INF = ("float('-inf')", 'float("-inf")', "-float('inf')", '-float("inf")', "-math.inf", "-torch.inf", "-np.inf", "-numpy.inf")
CASTS = frozenset({"float", "half", "bfloat16", "to", "type_as", "type"})


def match_attention(ctx: RuleContext, final: ast.expr) -> Attention | None:
    """The attention whose ``weights @ v`` is ``final``, or None."""
    operands = _matmul_operands(ctx, final)
    if operands is None:
        return None
    weights, value, kind = operands
    probe = NameWalk(ctx)
    softmax = _find_softmax(ctx, probe, weights)
    channels = False
    if softmax is None and kind == "bmm":  # ``torch.bmm(v, w.permute(0, 2, 1))``: values (b, c, n) times the weights' transpose
        flipped, _ = _untransposed(ctx, probe.through_names(value), bmm=True)
        softmax = _find_softmax(ctx, probe, flipped) if flipped is not None else None
        weights, value, channels = (flipped, weights, True) if softmax is not None else (weights, value, False)
    if softmax is None:
        return None
    found = Attention(final=final, softmax=softmax, query=final, key=final, value=value)
    if channels:
        found.layout |= {"channels"}
    walk = NameWalk(ctx, found)
    _find_softmax(ctx, walk, weights)  # again, recording the chain and what sits between
    if kind == "einsum":
        layout = einsum_layout(final, "output")
        if layout is None:
            return None
        found.layout |= layout
    if not _read_scores(ctx, walk, found, _softmax_of(ctx, softmax)):  # type: ignore[arg-type]
        return None
    dim = _softmax_dim(ctx, softmax)
    if dim != -1 and not (kind == "bmm" and dim == 2):
        found.unsafe.append(f"the softmax runs over dim={dim!r}, SDPA over the last dimension")
    if keyword_value(softmax, "dtype") is not None:
        found.unsafe.append("the softmax is computed in another dtype")
    if _module_of(ctx, softmax, "torch.nn.Softmax") is not None and not isinstance(softmax.func, ast.Call):
        found.unsafe.append(f"the `{ctx.segment(softmax.func)}` module (an nn.Softmax) is left unused")
    found.statements.sort(key=lambda s: s.lineno)
    return found


# --- the weights side: final matmul <- dropout / casts / names <- softmax ------------------------


def _matmul_operands(ctx: RuleContext, node: ast.expr) -> tuple[ast.expr, ast.expr, str] | None:
    """(left, right, kind) of a two-operand matmul; kind: "matmul" | "bmm" | "einsum"."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right, "matmul"
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    qual = ctx.call_qualname(node) or ""
    if qual in MATMUL and len(node.args) == 2:
        return node.args[0], node.args[1], "bmm" if qual == "torch.bmm" else "matmul"
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("matmul", "bmm") and len(node.args) == 1 and not qual.startswith("torch."):
        return node.func.value, node.args[0], "bmm" if node.func.attr == "bmm" else "matmul"
    if qual == EINSUM and len(node.args) == 3 and einsum_spec(node) is not None:
        return node.args[1], node.args[2], "einsum"
    return None


def _find_softmax(ctx: RuleContext, walk: NameWalk, node: ast.expr) -> ast.Call | None:
    for _ in range(12):  # a handful of wrappers at most
        node = walk.through_names(node)
        if not isinstance(node, ast.Call):
            return None
        if _softmax_of(ctx, node) is not None:
            return node
        inner = _dropout_input(ctx, walk, node) or _cast_input(walk, node) or _identity_input(ctx, walk, node)
        if inner is None:
            return None
        node = inner
    return None


def _softmax_of(ctx: RuleContext, call: ast.Call) -> ast.expr | None:
    """The input of a torch softmax call (``torch.softmax(x, -1)``, ``F.softmax(x, dim=-1)``,
    ``x.softmax(-1)`` in a file that imports torch, ``self.softmax(x)`` where ``__init__`` sets
    ``self.softmax = nn.Softmax(dim=-1)``), else None."""
    qual = ctx.call_qualname(call) or ""
    if qual in SOFTMAX:
        return call.args[0] if call.args else None
    if _module_of(ctx, call, "torch.nn.Softmax") is not None:
        return call.args[0]
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "softmax" and "torch" in {v.split(".")[0] for v in ctx.aliases.values()}:
        return None if qual.startswith(("torch.", "np.", "numpy.", "scipy.", "jax.")) or is_name(func.value, "self") else func.value
    return None


def _softmax_dim(ctx: RuleContext, call: ast.Call) -> object:
    module = _module_of(ctx, call, "torch.nn.Softmax")
    if module is not None:  # ``nn.Softmax(dim=-1)``: the module's dim
        call = module
    dim = keyword_value(call, "dim")
    if dim is None:
        positional = call.args[1:] if (ctx.call_qualname(call) or "") in SOFTMAX else call.args
        dim = positional[0] if positional else None
    return _int_value(dim) if dim is not None else None


def _module_of(ctx: RuleContext, call: ast.Call, qualname: str) -> ast.Call | None:
    """The ``qualname(...)`` construction that the class's ``__init__`` assigns to ``self.name``, when ``call``
    is ``self.name(x)`` (one argument), else None."""
    func = call.func
    if isinstance(func, ast.Call) and len(call.args) == 1 and not call.keywords and ctx.call_qualname(func) == qualname:
        return func  # built and called at once: ``nn.Softmax(dim=-1)(scores)``
    if not (isinstance(func, ast.Attribute) and is_name(func.value, "self") and len(call.args) == 1 and not call.keywords):
        return None
    owner = ctx.enclosing_class(call)
    for init in owner.body if owner is not None else ():
        if not (isinstance(init, ast.FunctionDef) and init.name == "__init__"):
            continue
        for stmt in ast.walk(init):
            if (
                isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                and is_name(stmt.targets[0].value, "self") and stmt.targets[0].attr == func.attr
                and isinstance(stmt.value, ast.Call) and ctx.call_qualname(stmt.value) == qualname
            ):
                return stmt.value
    return None


def _dropout_input(ctx: RuleContext, walk: NameWalk, call: ast.Call) -> ast.expr | None:
    """The input of a dropout on the weights, recording ``dropout_p``; None when ``call`` is no dropout."""
    found = walk.found
    qual = ctx.call_qualname(call) or ""
    if qual in DROPOUT and call.args:
        p = keyword_value(call, "p") or (call.args[1] if len(call.args) > 1 else None)
        training = keyword_value(call, "training") or (call.args[2] if len(call.args) > 2 else None)
        p_text = ctx.segment(p) if p is not None else "0.5"
        if found is not None:
            found.dropout = f"{p_text} if {ctx.segment(training)} else 0.0" if training is not None else p_text
            found.unsafe.append("dropout draws a different random mask inside SDPA")
        return call.args[0]
    func = call.func
    if isinstance(func, ast.Attribute) and "drop" in func.attr.lower() and len(call.args) == 1 and not call.keywords:
        if found is not None:  # ``self.attn_drop(weights)``: an nn.Dropout module
            found.dropout = f"{ctx.segment(func)}.p if self.training else 0.0" if _on_self(func) else f"{ctx.segment(func)}.p"
            found.unsafe.append("dropout draws a different random mask inside SDPA")
        return call.args[0]
    return None


def _cast_input(walk: NameWalk, call: ast.Call) -> ast.expr | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in CASTS:
        if walk.found is not None:
            walk.found.unsafe.append("the weights are cast to another dtype")
        return func.value
    return None


def _identity_input(ctx: RuleContext, walk: NameWalk, call: ast.Call) -> ast.expr | None:
    """The input of ``self.name(x)`` where the class's ``__init__`` sets ``self.name = nn.Identity()``
    (a hook point for inspecting the weights), else None."""
    if _module_of(ctx, call, "torch.nn.Identity") is None:
        return None
    if walk.found is not None:
        walk.found.unsafe.append(f"the `self.{call.func.attr}` hook point (an nn.Identity) goes away")  # type: ignore[attr-defined]
    return call.args[0]


# --- the scores side: softmax <- mask / scale / names <- q @ kᵀ ----------------------------------


def _read_scores(ctx: RuleContext, walk: NameWalk, found: Attention, node: ast.expr) -> bool:
    """Walk the softmax input down to ``q @ kᵀ``, filling in scale, mask, query and key."""
    for _ in range(12):
        node = walk.through_names(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            scores, scale = (node.left, node.right) if _reaches_matmul(ctx, node.left) else (node.right, node.left)
            if _reaches_matmul(ctx, scale) or found.scale is not None or (isinstance(node.op, ast.Div) and scores is node.right):
                return False
            text = _source(ctx, scale)
            found.scale = f"1 / {text}" if isinstance(node.op, ast.Div) else text
            node = scores
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and found.mask is None:
            scores, mask = (node.left, node.right) if _reaches_matmul(ctx, node.left) else (node.right, node.left)
            found.mask = _source(ctx, mask, bare=True)
            found.unsafe.append("an additive mask is passed as attn_mask, where a boolean mask would mean the opposite")
            node = scores
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "masked_fill" and found.mask is None:
            if len(node.args) != 2:
                return False
            condition, fill = node.args
            found.mask = _negated(ctx, condition)
            if ctx.segment(fill).replace(" ", "") not in {s.replace(" ", "") for s in NEG_INF}:
                found.unsafe.append(f"the fill value {ctx.segment(fill)} is finite: rows with every position masked give NaN in SDPA")
            node = node.func.value
            continue
        if isinstance(node, ast.Call) and (inner := _identity_input(ctx, walk, node)) is not None:
            node = inner
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("float", "to", "type_as"):
            found.unsafe.append("the scores are upcast before the softmax")
            node = node.func.value
            continue
        return _read_core(ctx, found, node)
    return False


def _read_core(ctx: RuleContext, found: Attention, node: ast.expr) -> bool:
    """``q @ kᵀ`` (or ``einsum('...id,...jd->...ij', q, k)``): sets query and key."""
    operands = _matmul_operands(ctx, node)
    if operands is None:
        return False
    query, key_t, kind = operands
    if kind == "einsum":
        layout = einsum_layout(node, "scores")
        if layout is None:
            return False
        found.layout |= layout
        found.query, found.key = query, key_t
        return True
    walk = NameWalk(ctx, found)
    key, exact = _untransposed(ctx, walk.through_names(key_t), bmm=kind == "bmm")
    if key is None and kind == "bmm" and _channels_last(ctx, walk.through_names(query)) and _channels_first(walk.through_names(key_t)):
        found.layout |= {"channels"}  # ``torch.bmm(q, k)`` with q (b, n, c) and k (b, c, n): a U-Net's attention block
        found.query, found.key = query, key_t
        return True
    if key is None:
        return False
    if not exact:
        found.unsafe.append("the key's transpose names dimensions of unknown rank")
    found.query, found.key = query, key
    return True


def _untransposed(ctx: RuleContext, node: ast.expr, bmm: bool) -> tuple[ast.expr | None, bool]:
    """(the key, whether its transpose certainly swaps the last two dims) for a transposed key."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "contiguous" and not node.args:
        node = node.func.value
    if isinstance(node, ast.Attribute) and node.attr == "mT":
        return node.value, True
    if isinstance(node, ast.Attribute) and node.attr == "T":
        return node.value, False
    if not isinstance(node, ast.Call):
        return None, False
    qual = ctx.call_qualname(node) or ""
    func = node.func
    if qual == "torch.transpose" and len(node.args) == 3:
        dims = [_int_value(a) for a in node.args[1:]]
        return (node.args[0], _last_two(dims, bmm)) if all(isinstance(d, int) for d in dims) else (None, False)
    if not isinstance(func, ast.Attribute) or qual.startswith("torch."):
        return None, False
    if func.attr == "transpose" and len(node.args) == 2:
        dims = [_int_value(a) for a in node.args]
        return (func.value, _last_two(dims, bmm)) if all(isinstance(d, int) for d in dims) else (None, False)
    if func.attr == "t" and not node.args:
        return func.value, True
    if func.attr == "permute" and len(node.args) >= 2:
        dims = [_int_value(a) for a in node.args]
        n = len(dims)
        if dims == list(range(n - 2)) + [n - 1, n - 2]:
            return func.value, True
    return None, False


def _channels_last(ctx: RuleContext, node: ast.expr) -> bool:
    """``x.permute(0, 2, 1)`` or ``x.permute(0, 2, 3, 1).reshape(b, h * w, c)``: the channels (dim 1) moved last."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape", "contiguous"):
        node = node.func.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "contiguous":
            node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "permute"):
        return False
    dims = [_int_value(a) for a in node.args]
    return len(dims) >= 3 and dims[0] == 0 and dims[-1] == 1


def _channels_first(node: ast.expr) -> bool:
    """``k.view(b, c, h * w)`` / ``k.reshape(b, c, -1)`` of a feature map not permuted: (b, c, n)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape")
            and len(node.args) == 3 and not node.keywords):
        return False
    inner = node.func.value
    return not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in ("permute", "transpose"))


def _last_two(dims: list[object], bmm: bool) -> bool:
    pair = sorted(d for d in dims if isinstance(d, int))
    return pair == [-2, -1] or (bmm and pair == [1, 2])


# --- small helpers ------------------------------------------------------------------------------


def _has_matmul(ctx: RuleContext, node: ast.AST) -> bool:
    return any(_matmul_operands(ctx, n) is not None for n in ast.walk(node) if isinstance(n, ast.expr))


def _reaches_matmul(ctx: RuleContext, node: ast.AST, depth: int = 6) -> bool:
    """Whether ``node`` computes a matmul itself or through the local names it reads."""
    if _has_matmul(ctx, node):
        return True
    if depth == 0:
        return False
    walk = NameWalk(ctx)
    for name in ast.walk(node):
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
            assign = walk.definition(name)
            if assign is not None and _reaches_matmul(ctx, assign.value, depth - 1):
                return True
    return False


def _negated(ctx: RuleContext, condition: ast.expr) -> str:
    """Source of ``not condition`` (``m == 0`` -> ``m != 0``, ``~m`` -> ``m``)."""
    if isinstance(condition, ast.Compare) and len(condition.ops) == 1:
        flipped = {ast.Eq: "!=", ast.NotEq: "==", ast.Lt: ">=", ast.GtE: "<", ast.Gt: "<=", ast.LtE: ">"}.get(type(condition.ops[0]))
        if flipped:
            return f"{_source(ctx, condition.left)} {flipped} {_source(ctx, condition.comparators[0])}"
    if isinstance(condition, ast.UnaryOp) and isinstance(condition.op, (ast.Invert, ast.Not)):
        return _source(ctx, condition.operand, bare=True)
    if isinstance(condition, ast.Call) and isinstance(condition.func, ast.Attribute) and condition.func.attr == "logical_not" and not condition.args:
        return _source(ctx, condition.func.value, bare=True)
    return f"~{_source(ctx, condition)}"


def _source(ctx: RuleContext, node: ast.expr, bare: bool = False) -> str:
    """A node's source, parenthesised unless it is atomic (or ``bare``: it stands alone)."""
    text = ctx.segment(node)
    atomic = isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant))
    return text if atomic or bare else f"({text})"


def _int_value(node: ast.AST | None) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return node


def _on_self(func: ast.Attribute) -> bool:
    node: ast.AST = func
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"
