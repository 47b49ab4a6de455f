"""TT508's einsum reading: the spec of a two-operand ``torch.einsum`` and whether it lays out
attention scores (``B i d, B j d -> B i j``) or output (``B i j, B j e -> B i e``)."""

from __future__ import annotations

import ast


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


def einsum_layout(call: ast.expr, which: str) -> frozenset[str] | None:
    """How an einsum lays out attention, or None when it is not one: no notes for
    ``B i d, B j d -> B i j`` (scores) and ``B i j, B j e -> B i e`` (output); ``"channels"``
    when a feature dimension comes before the positions somewhere (``B d i, B d j -> B i j``, as
    guided-diffusion's ``bct,bcs->bts``); ``"shared"`` when the key or value has fewer batch
    dimensions than the query (one key/value head for all heads: ``b h i d, b j d -> b h i j``); ``"permuted"``
    when the batch letters sit elsewhere (``b l h e, b s h e -> b h l s``: positions before heads)."""
    spec = einsum_spec(call)  # type: ignore[arg-type]
    if spec is None or spec.count(",") != 1 or spec.count("->") != 1:
        return None
    inputs, out = spec.split("->")
    a, b = inputs.split(",")
    if min(len(a), len(b), len(out)) < 2 or len(set(a)) != len(a) or len(set(b)) != len(b):
        return None
    layout = _batched_layout(a, b, out, which)
    if layout is None and _permuted(a, b, out, which):
        return frozenset({"permuted"})
    return layout


def _batched_layout(a: str, b: str, out: str, which: str) -> frozenset[str] | None:
    """The layouts SDPA takes as they are (batch dimensions first, the two positions or features last)."""
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


def _permuted(a: str, b: str, out: str, which: str) -> bool:
    """Attention with the batch letters anywhere (``blhe,bshe->bhls`` then ``bhls,bshd->blhd``: the positions
    before the heads): one letter summed, one free letter in each operand, every other letter in both and in
    the output; the scores end with (query, key) positions, and the output sums the weights' last letter."""
    summed = set(a) & set(b) - set(out)
    free_a, free_b = set(a) - set(b), set(b) - set(a)
    batch = set(a) & set(b) & set(out)
    if len(summed) != 1 or len(free_a) != 1 or len(free_b) != 1 or set(out) != batch | free_a | free_b:
        return False
    if which == "scores":
        return out[-2:] == free_a.pop() + free_b.pop()
    return a[-1] == next(iter(summed)) and a[-2] == next(iter(free_a))


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
