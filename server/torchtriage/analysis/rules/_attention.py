"""Recognise hand-written attention: ``softmax(q @ kᵀ · scale [+ mask]) [dropout] @ v``.

The matcher starts at a matmul (``a @ v``, ``torch.matmul``, ``torch.bmm``,
``a.matmul(v)``, a two-operand ``torch.einsum``) and walks its left operand
*backwards*: through local names (the nearest plain assignment before the use,
in the same or an enclosing block), dropout and dtype casts, to a torch
``softmax`` over the last dimension (and ``self.id(x)`` hook points that are an
``nn.Identity``); then through the softmax's input: mask
(``masked_fill`` / ``+ mask``), scale (``* s`` / ``/ s``), names again, to the
scores matmul ``q @ k.transpose(-2, -1)`` (``.mT``, ``torch.transpose``,
``permute`` swapping the last two dims, ``bmm`` with ``transpose(1, 2)``, or an
einsum contracting the feature dims, last or, channels first, before the positions).  Anything else on the way ends the walk: a
classification softmax never reaches a matmul, an MLP's matmul chain never
passes a softmax.

The result says how exactly the shape was recognised: ``unsafe`` lists what a
rewrite to ``scaled_dot_product_attention`` would change (dropout's random
stream, a finite fill value, an additive mask of unknown dtype, an upcast, a
transpose whose rank is unknown); the fix module turns it into edits.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..module_index import ModuleIndex

SOFTMAX = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
MATMUL = frozenset({"torch.matmul", "torch.bmm"})
DROPOUT = frozenset({"torch.nn.functional.dropout", "torch.dropout"})
EINSUM = "torch.einsum"
NEG_INF = ("float('-inf')", 'float("-inf")', "-float('inf')", '-float("inf")', "-math.inf", "-torch.inf", "-np.inf", "-numpy.inf")
CASTS = frozenset({"float", "half", "bfloat16", "to", "type_as", "type"})


@dataclass
class Attention:
    """One recognised attention computation and what a rewrite needs."""

    final: ast.expr  # the ``weights @ v`` node
    softmax: ast.Call
    query: ast.expr
    key: ast.expr  # the key itself (the transpose peeled off)
    value: ast.expr
    statements: list[ast.Assign] = field(default_factory=list)  # assignments walked through, earliest first
    chain_names: list[ast.Name] = field(default_factory=list)  # the Name loads the walk went through
    scale: str | None = None  # the SDPA ``scale=`` source; None: no scale in the code (SDPA needs 1.0)
    mask: str | None = None  # the SDPA ``attn_mask=`` source
    dropout: str | None = None  # the SDPA ``dropout_p=`` source
    unsafe: list[str] = field(default_factory=list)  # what a rewrite would change
    # What the einsums' layout needs before SDPA can take it: "channels" (q, k or v laid out
    # (…, E, L), SDPA wants (…, L, E)), "shared" (one key/value head for every query head).
    layout: frozenset[str] = frozenset()
    conditional: ast.If | None = None  # an ``if`` that updates the scores on some calls (a mask), looked past
    blocked: str = ""  # why no rewrite is offered

    @property
    def first_statement(self) -> ast.stmt | None:
        return self.statements[0] if self.statements else None


class NameWalk:
    """Backwards resolution of local names inside one scope."""

    def __init__(self, ctx: ModuleIndex, found: Attention | None = None) -> None:
        self.ctx = ctx
        self.found = found

    def definition(self, name: ast.Name) -> ast.Assign | None:
        """The plain ``name = value`` that the load ``name`` reads: the nearest statement before it
        (in its block, then the enclosing blocks) that binds the name; None when that binding is not
        a single-target assignment.  An ``if`` without ``else`` that only updates the name from
        itself (``if mask is not None: sim = sim.masked_fill(~mask, -inf)``) is looked past, and
        recorded (:attr:`Attention.conditional`): the attention is the same with or without it."""
        stmt = self.ctx.enclosing_statement(name)
        while stmt is not None:
            block, index = block_of(self.ctx, stmt)
            for earlier in reversed(block[:index]):
                if _binds(earlier, name.id):
                    if isinstance(earlier, ast.Assign) and len(earlier.targets) == 1 and _is_name(earlier.targets[0], name.id):
                        return earlier
                    if _updates_only_from_itself(earlier, name.id):
                        if self.found is not None and self.found.conditional is None:
                            self.found.conditional = earlier
                        continue
                    return None
            parent = self.ctx.parents.get(stmt)
            if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)):
                return None
            stmt = parent if isinstance(parent, ast.stmt) else self.ctx.enclosing_statement(parent)
        return None

    def through_names(self, node: ast.expr) -> ast.expr:
        """Follow a Name to the value it was assigned (repeatedly), recording the walk."""
        while isinstance(node, ast.Name):
            assign = self.definition(node)
            if assign is None:
                return node
            if self.found is not None:
                self.found.chain_names.append(node)
                self.found.statements.append(assign)
            node = assign.value
        return node


def match_attention(ctx: ModuleIndex, final: ast.expr) -> Attention | None:
    """The attention whose ``weights @ v`` is ``final``, or None."""
    operands = _matmul_operands(ctx, final)
    if operands is None:
        return None
    weights, value, kind = operands
    probe = NameWalk(ctx)
    softmax = _find_softmax(ctx, probe, weights)
    if softmax is None:
        return None
    found = Attention(final=final, softmax=softmax, query=final, key=final, value=value)
    walk = NameWalk(ctx, found)
    _find_softmax(ctx, walk, weights)  # again, recording the chain and what sits between
    if kind == "einsum":
        layout = _einsum_layout(final, "output")
        if layout is None:
            return None
        found.layout |= layout
    if not _read_scores(ctx, walk, found, _softmax_of(ctx, softmax)):  # type: ignore[arg-type]
        return None
    dim = _softmax_dim(ctx, softmax)
    if dim != -1 and not (kind == "bmm" and dim == 2):
        found.unsafe.append(f"the softmax runs over dim={dim!r}, SDPA over the last dimension")
    if _keyword(softmax, "dtype") is not None:
        found.unsafe.append("the softmax is computed in another dtype")
    found.statements.sort(key=lambda s: s.lineno)
    return found


# --- the weights side: final matmul <- dropout / casts / names <- softmax ------------------------


def _matmul_operands(ctx: ModuleIndex, node: ast.expr) -> tuple[ast.expr, ast.expr, str] | None:
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


def _find_softmax(ctx: ModuleIndex, walk: NameWalk, node: ast.expr) -> ast.Call | None:
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


def _softmax_of(ctx: ModuleIndex, call: ast.Call) -> ast.expr | None:
    """The input of a torch softmax call (``torch.softmax(x, -1)``, ``F.softmax(x, dim=-1)``,
    ``x.softmax(-1)`` in a file that imports torch), else None."""
    qual = ctx.call_qualname(call) or ""
    if qual in SOFTMAX:
        return call.args[0] if call.args else None
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "softmax" and "torch" in {v.split(".")[0] for v in ctx.aliases.values()}:
        return None if qual.startswith(("torch.", "np.", "numpy.", "scipy.", "jax.")) else func.value
    return None


def _softmax_dim(ctx: ModuleIndex, call: ast.Call) -> object:
    dim = _keyword(call, "dim")
    if dim is None:
        positional = call.args[1:] if (ctx.call_qualname(call) or "") in SOFTMAX else call.args
        dim = positional[0] if positional else None
    return _int_value(dim) if dim is not None else None


def _dropout_input(ctx: ModuleIndex, walk: NameWalk, call: ast.Call) -> ast.expr | None:
    """The input of a dropout on the weights, recording ``dropout_p``; None when ``call`` is no dropout."""
    found = walk.found
    qual = ctx.call_qualname(call) or ""
    if qual in DROPOUT and call.args:
        p = _keyword(call, "p") or (call.args[1] if len(call.args) > 1 else None)
        training = _keyword(call, "training") or (call.args[2] if len(call.args) > 2 else None)
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


def _identity_input(ctx: ModuleIndex, walk: NameWalk, call: ast.Call) -> ast.expr | None:
    """The input of ``self.name(x)`` where the class's ``__init__`` sets ``self.name = nn.Identity()``
    (a hook point for inspecting the weights), else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and _is_name(func.value, "self") and len(call.args) == 1 and not call.keywords):
        return None
    owner = ctx.enclosing_class(call)
    for init in owner.body if owner is not None else ():
        if not (isinstance(init, ast.FunctionDef) and init.name == "__init__"):
            continue
        for stmt in ast.walk(init):
            if (
                isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                and _is_name(stmt.targets[0].value, "self") and stmt.targets[0].attr == func.attr
                and isinstance(stmt.value, ast.Call) and ctx.call_qualname(stmt.value) == "torch.nn.Identity"
            ):
                if walk.found is not None:
                    walk.found.unsafe.append(f"the `self.{func.attr}` hook point (an nn.Identity) goes away")
                return call.args[0]
    return None


# --- the scores side: softmax <- mask / scale / names <- q @ kᵀ ----------------------------------


def _read_scores(ctx: ModuleIndex, walk: NameWalk, found: Attention, node: ast.expr) -> bool:
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


def _read_core(ctx: ModuleIndex, found: Attention, node: ast.expr) -> bool:
    """``q @ kᵀ`` (or ``einsum('...id,...jd->...ij', q, k)``): sets query and key."""
    operands = _matmul_operands(ctx, node)
    if operands is None:
        return False
    query, key_t, kind = operands
    if kind == "einsum":
        layout = _einsum_layout(node, "scores")
        if layout is None:
            return False
        found.layout |= layout
        found.query, found.key = query, key_t
        return True
    key, exact = _untransposed(ctx, NameWalk(ctx, found).through_names(key_t), bmm=kind == "bmm")
    if key is None:
        return False
    if not exact:
        found.unsafe.append("the key's transpose names dimensions of unknown rank")
    found.query, found.key = query, key
    return True


def _untransposed(ctx: ModuleIndex, node: ast.expr, bmm: bool) -> tuple[ast.expr | None, bool]:
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


def _last_two(dims: list[object], bmm: bool) -> bool:
    pair = sorted(d for d in dims if isinstance(d, int))
    return pair == [-2, -1] or (bmm and pair == [1, 2])


def einsum_spec(call: ast.Call) -> str | None:
    """An einsum's spec without spaces: a string literal, or an f-string with no placeholder
    (``einsum(f"b h i d, b h j d -> b h i j", q, k)``); None for anything computed."""
    spec = call.args[0] if call.args else None
    if isinstance(spec, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in spec.values):
        text = "".join(str(v.value) for v in spec.values)  # type: ignore[attr-defined]
    elif isinstance(spec, ast.Constant) and isinstance(spec.value, str):
        text = spec.value
    else:
        return None
    return text.replace(" ", "").replace("...", "*")  # (an ellipsis: one batch "letter")


def _einsum_layout(call: ast.expr, which: str) -> frozenset[str] | None:
    """How an einsum lays out attention, or None when it is not one: no notes for
    ``B i d, B j d -> B i j`` (scores) and ``B i j, B j e -> B i e`` (output); ``"channels"``
    when a feature dimension comes before the positions somewhere (``B d i, B d j -> B i j``, as
    guided-diffusion's ``bct,bcs->bts``); ``"shared"`` when the key or value has fewer batch
    dimensions than the query (one key/value head for all heads: ``b h i d, b j d -> b h i j``)."""
    spec = einsum_spec(call)  # type: ignore[arg-type]
    if spec is None or spec.count(",") != 1 or spec.count("->") != 1:
        return None
    inputs, out = spec.split("->")
    a, b = inputs.split(",")
    if min(len(a), len(b), len(out)) < 2 or len(set(a)) != len(a) or len(set(b)) != len(b):
        return None
    batch, other = a[:-2], b[:-2]
    if out[:-2] != batch or not _subsequence(other, batch) or set(a[-2:] + b[-2:]) & set(batch):
        return None
    notes = {"shared"} if other != batch else set()
    contraction = _contraction(a[-2:], b[-2:], out[-2:])
    if contraction is None:
        return None
    free_a, free_b, summed = contraction
    if which == "scores":  # q (i, d) and k (j, d) summed over d into (i, j)
        if out[-2:] != free_a + free_b:
            return None
        rows = a[-2:] == free_a + summed and b[-2:] == free_b + summed
    else:  # the weights (i, j) and v (j, e) summed over the key positions j into (i, e)
        if a[-2:] != free_a + summed:
            return None
        rows = b[-2:] == summed + free_b and out[-2:] == free_a + free_b
    if not rows:
        notes.add("channels")
    return frozenset(notes)


def _contraction(x: str, y: str, out: str) -> tuple[str, str, str] | None:
    """(x's free letter, y's free letter, the letter summed over) when two two-letter operands
    share exactly one letter and ``out`` holds the two others (in either order)."""
    shared = set(x) & set(y)
    if len(shared) != 1 or len(set(x + y)) != 3:
        return None
    summed = shared.pop()
    free_x, free_y = x.replace(summed, ""), y.replace(summed, "")
    return (free_x, free_y, summed) if set(out) == {free_x, free_y} else None


def _subsequence(short: str, long: str) -> bool:
    """Whether the letters of ``short`` appear in ``long`` in the same order."""
    letters = iter(long)
    return all(letter in letters for letter in short)


# --- small helpers ------------------------------------------------------------------------------


def _has_matmul(ctx: ModuleIndex, node: ast.AST) -> bool:
    return any(_matmul_operands(ctx, n) is not None for n in ast.walk(node) if isinstance(n, ast.expr))


def _reaches_matmul(ctx: ModuleIndex, node: ast.AST, depth: int = 6) -> bool:
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


def _negated(ctx: ModuleIndex, condition: ast.expr) -> str:
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


def _source(ctx: ModuleIndex, node: ast.expr, bare: bool = False) -> str:
    """A node's source, parenthesised unless it is atomic (or ``bare``: it stands alone)."""
    text = ctx.segment(node)
    atomic = isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant))
    return text if atomic or bare else f"({text})"


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


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


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _updates_only_from_itself(stmt: ast.stmt, name: str) -> bool:
    """``if cond: name = name.masked_fill(...)`` / ``name = name + bias`` (no ``else``): every
    statement of the body that binds ``name`` rebinds it, whole, from ``name`` itself (the others,
    ``mask = F.pad(mask, ...)``, prepare the update)."""
    if not isinstance(stmt, ast.If) or stmt.orelse:
        return False
    updates = [inner for inner in stmt.body if _binds(inner, name)]
    return bool(updates) and all(
        isinstance(inner, ast.Assign) and len(inner.targets) == 1 and _is_name(inner.targets[0], name)
        and any(_is_name(n, name) for n in ast.walk(inner.value))
        for inner in updates
    )


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether a statement (or a block inside it) binds ``name``."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
    return False


def block_of(ctx: ModuleIndex, stmt: ast.stmt) -> tuple[list[ast.stmt], int]:
    """The statement list holding ``stmt`` and its index there."""
    parent = ctx.parents.get(stmt)
    if parent is not None:
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and stmt in value:
                return value, value.index(stmt)
    return [stmt], 0
