"""TT508: attention written out by hand instead of ``F.scaled_dot_product_attention``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator

from ...findings import Applicability, Edit, Fix, Severity
from ..fixes import replace_expression, statement_lines_span
from ._tt508_attention import Attention, NameWalk, block_of
from ._tt508_match import match_attention
from .base import Invalid, Report, Rule, RuleContext, Valid

if TYPE_CHECKING:
    import libcst as cst
else:
    from ..lazy import libcst as cst  # imported on first use: only fixes need it

SDPA = "scaled_dot_product_attention"


def sdpa_name(ctx: RuleContext) -> str | None:
    """How this file can name ``torch.nn.functional.scaled_dot_product_attention`` (None: it imports no torch)."""
    for wanted, suffix in (("torch.nn.functional", ""), ("torch.nn", ".functional"), ("torch", ".nn.functional")):
        for local, qualified in sorted(ctx.aliases.items()):
            if qualified == wanted and "." not in local:
                return f"{local}{suffix}.{SDPA}"
    return None


def sdpa_call(ctx: RuleContext, found: Attention, name: str) -> str:
    """The ``scaled_dot_product_attention(q, k, v, ...)`` call that computes ``found``."""
    args = [ctx.segment(found.query), ctx.segment(found.key), ctx.segment(found.value)]
    if found.mask is not None:
        args.append(f"attn_mask={found.mask}")
    if found.dropout is not None:
        args.append(f"dropout_p={found.dropout}")
    args.append(f"scale={found.scale if found.scale is not None else '1.0'}")  # SDPA's default is 1/sqrt(E)
    return f"{name}({', '.join(args)})"


def _alone_on_its_lines(ctx: RuleContext, stmt: ast.stmt) -> bool:
    first, last = ctx.lines[stmt.lineno - 1], ctx.lines[(stmt.end_lineno or stmt.lineno) - 1]
    before = first[: ctx.char_column(stmt.lineno, stmt.col_offset)]
    after = last[ctx.char_column(stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0):]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def why_not_fixable(ctx: RuleContext, found: Attention) -> str:
    """Why the computation cannot be rewritten in place ("" when it can)."""
    final_stmt = ctx.enclosing_statement(found.final)
    if final_stmt is None:
        return "it is not inside a statement"
    if found.conditional is not None:
        return f"the scores are changed only on some calls (the `if` on line {found.conditional.lineno}): pass that as attn_mask to use SDPA"
    if "channels" in found.layout:
        return "it lays the features out before the positions (…, E, L) in q, k or v, and SDPA wants (…, L, E): transpose them to use it"
    if "permuted" in found.layout:
        return "its einsums lay q, k or v out in another order than SDPA's (B, H, L, E), such as the positions before the heads: permute them to use it"
    if "shared" in found.layout:
        return "the keys and values have no head dimension (one for all heads): unsqueeze them to use SDPA"
    statements = list(dict.fromkeys(found.statements))
    block, index = block_of(ctx, final_stmt)
    if statements and block[max(0, index - len(statements)):index] != statements:
        return "its steps are not consecutive statements of one block"
    if not all(_alone_on_its_lines(ctx, s) for s in statements):
        return "a step shares its line with other code"
    scope: ast.AST = ctx.enclosing_function(found.final) or ctx.tree
    names = {s.targets[0].id for s in statements if isinstance(s.targets[0], ast.Name)}
    walked = {id(n) for n in found.chain_names}
    resolver = NameWalk(ctx)
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load) and id(node) not in walked:
            binding = resolver.definition(node)
            if binding is not None and binding not in statements:
                continue  # another binding of the same name (another branch, a later reuse)
            return f"`{node.id}` (line {node.lineno}) is also used elsewhere, and SDPA does not return the attention weights"
    return ""


def weights_feed_the_output(ctx: RuleContext, found: Attention) -> bool:
    """Whether the attention weights reach the output a second way after ``weights @ v`` (relative-position
    attention: ``output = output + self._matmul_with_relative_values(rel(p_attn), emb)``): SDPA, which returns
    no weights, cannot compute that output, so the attention is not SDPA's to take."""
    softmax_at, final_at = ctx.enclosing_statement(found.softmax), ctx.enclosing_statement(found.final)
    function = ctx.enclosing_function(found.final)
    if not (isinstance(softmax_at, ast.Assign) and isinstance(final_at, ast.Assign) and function is not None):
        return False
    output = {t.id for t in final_at.targets if isinstance(t, ast.Name)}
    derived = {t.id for t in softmax_at.targets if isinstance(t, ast.Name)}  # the weights, and what is computed from them
    for stmt in sorted((n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AugAssign))), key=lambda n: n.lineno):
        if stmt.lineno <= softmax_at.lineno or stmt is final_at:
            continue
        if not any(isinstance(n, ast.Name) and n.id in derived for n in ast.walk(stmt.value)):
            continue
        targets = {t.id for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(t, ast.Name)}
        if stmt.lineno > final_at.lineno and targets & output:
            return True
        derived |= targets
    return False


def has_sdpa_branch(ctx: RuleContext, node: ast.AST) -> bool:
    """Whether ``node`` is the fallback branch of an ``if fused: scaled_dot_product_attention(...) else: ...`` switch."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(ancestor, (ast.If, ast.IfExp)) and any(
            isinstance(n, ast.Call) and (ctx.call_qualname(n) or "").endswith(SDPA) for n in ast.walk(ancestor)
        ):
            return True
    return False


def attention_fix(ctx: RuleContext, found: Attention) -> Fix | None:
    """Delete the intermediate statements and compute ``weights @ v`` with SDPA."""
    name = sdpa_name(ctx)
    if name is None or why_not_fixable(ctx, found):
        return None
    applicability = Applicability.UNSAFE if found.unsafe else Applicability.SAFE
    call = cst.parse_expression(sdpa_call(ctx, found, name))
    replace = replace_expression(ctx, found.final, lambda _: call, "", applicability).edits
    removals = tuple(Edit(statement_lines_span(ctx, s), "") for s in dict.fromkeys(found.statements))
    return Fix("Use F.scaled_dot_product_attention", applicability, removals + replace)


class _Span(ast.expr):
    """A stand-in node covering several statements, for the finding's span."""


def _span_node(found: Attention) -> ast.AST:
    first = found.first_statement or found.final
    node = _Span()
    node.lineno, node.col_offset = first.lineno, first.col_offset
    node.end_lineno, node.end_col_offset = found.final.end_lineno, found.final.end_col_offset
    return node


class HandWrittenAttention(Rule):
    code = "TT508"
    name = "hand-written-attention"
    severity = Severity.INFO
    category = "compute"
    summary = "Attention is written out as `softmax(q @ k.transpose(-2, -1) * scale) @ v` instead of `F.scaled_dot_product_attention`."
    why = """
        Written out, attention runs as separate kernels (matmul, scale, mask,
        softmax, dropout, matmul), and each writes a full L x L score matrix
        per head to memory and keeps it for backward: memory and time grow with
        the square of the sequence length. `scaled_dot_product_attention`
        computes the same thing in one fused kernel (FlashAttention or
        memory-efficient attention on a GPU, a flash kernel on the CPU) that
        never stores the scores; practitioners report 2-4x on the attention
        kernels. Measured on this project's 2-core CPU (batch 8, 4 heads, 32
        dims per head, forward plus backward, medians of 7): 20 ms by hand
        against 12 ms through SDPA at 256 tokens, 164 ms against 55 ms at 512
        tokens: the gap grows with the sequence. `torchtriage profile` shows
        what these lines cost in your run (TTR603).
    """
    fix_description = """
        Call `F.scaled_dot_product_attention(q, k, v, attn_mask=..., dropout_p=..., scale=...)`
        and delete the intermediate statements. The fix is safe when the
        pattern is matched exactly (transpose of the last two dims, softmax
        over the last dim, a `-inf` `masked_fill` or none, no dropout, the
        weights used nowhere else); results then agree to rounding (the fused
        kernel sums in another order). With dropout (another random mask), a
        finite fill value (fully masked rows become NaN), an additive mask, a
        cast, or a transpose of unknown rank the fix is unsafe; when the
        weights are returned or reused, or the steps are spread over other
        code, no fix is offered.
    """
    fix_applicability = Applicability.SAFE
    example_bad = """
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = weights @ v
    """
    example_good = """
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask != 0, scale=1 / math.sqrt(q.size(-1)))
    """
    VALID = (
        Valid(
            """
            # relative-position attention: the weights reach the output a second way (the relative values),
            # which SDPA, returning no weights, cannot compute
            import math
            import torch
            import torch.nn.functional as F

            def attention(self, query, key, value):
                scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.k_channels)
                p_attn = self.drop(F.softmax(scores, dim=-1))
                output = torch.matmul(p_attn, value)
                if self.window_size is not None:
                    relative_weights = self._absolute_position_to_relative_position(p_attn)
                    output = output + self._matmul_with_relative_values(relative_weights, self.emb_rel_v)
                return output
            """
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def classify(model, x):
                logits = model(x)
                probs = F.softmax(logits, dim=-1)
                return probs.argmax(-1)
            """
        ),
        Valid(
            """
            import torch
            def mlp(x, w1, w2):
                h = x @ w1.transpose(-2, -1)
                h = torch.relu(h)
                return h @ w2
            """
        ),
        Valid(
            """
            import torch
            def pool(x, score):
                w = torch.softmax(score(x).squeeze(-1), dim=-1)
                return torch.bmm(w.unsqueeze(1), x)
            """
        ),
        Valid(
            """
            import numpy as np
            from scipy.special import softmax
            def attend(q, k, v):
                return softmax(q @ k.T, axis=-1) @ v
            """
        ),
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v):
                return F.scaled_dot_product_attention(q, k, v)
            """
        ),
        Valid(
            """
            # the fallback branch of a fused-attention switch
            import torch.nn.functional as F
            def attend(self, q, k, v):
                if self.fused_attn:
                    x = F.scaled_dot_product_attention(q, k, v)
                else:
                    attn = (q * self.scale) @ k.transpose(-2, -1)
                    attn = attn.softmax(dim=-1)
                    x = attn @ v
                return x
            """
        ),
        Valid(
            """
            # linear attention: softmax over q's features and k's positions, no L x L scores
            import torch
            from torch import einsum
            def linear_attend(q, k, v):
                q = q.softmax(dim=-2)
                k = k.softmax(dim=-1)
                context = einsum("b h d n, b h e n -> b h d e", k, v)
                return einsum("b h d e, b h d n -> b h e n", context, q)
            """
        ),
        Valid(
            """
            # talking heads: the heads are mixed between the scores and the softmax
            import torch
            def attend(self, q, k, v):
                attn = q @ k.transpose(-2, -1)
                attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                attn = attn.softmax(dim=-1)
                attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                return attn @ v
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # BERT's self-attention: an nn.Softmax built and called at once, relative-position scores added
            # only under an option (an if / elif inside an if): found, no automatic fix
            import math
            import torch
            from torch import nn

            class SelfAttention(nn.Module):
                def forward(self, query_layer, key_layer, value_layer, attention_mask):
                    attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
                    if self.position_embedding_type in ("relative_key", "relative_key_query"):
                        rel = self.distance_embedding(self.distance)
                        if self.position_embedding_type == "relative_key":
                            attention_scores = attention_scores + torch.einsum("bhld,lrd->bhlr", query_layer, rel)
                        elif self.position_embedding_type == "relative_key_query":
                            attention_scores = attention_scores + torch.einsum("bhrd,lrd->bhlr", key_layer, rel)
                    attention_scores = attention_scores / math.sqrt(self.attention_head_size)
                    attention_scores = attention_scores + attention_mask
                    attention_probs = nn.Softmax(dim=-1)(attention_scores)
                    return torch.matmul(self.dropout(attention_probs), value_layer)
            """,
            lines=(9,),
        ),
        Invalid(
            """
            # features before positions (b, c, t), as in diffusion U-Nets: found, no automatic fix
            import torch as th
            def attend(q, k, v, scale):
                weight = th.einsum("bct,bcs->bts", q * scale, k * scale)
                weight = th.softmax(weight.float(), dim=-1).type(weight.dtype)
                return th.einsum("bts,bcs->bct", weight, v)
            """,
            lines=(4,),
        ),
        Invalid(
            """
            # an f-string spec with an ellipsis, and a mask applied only when given: found, no automatic fix
            import torch
            from torch import einsum
            def attend(q, k, v, mask=None):
                sim = einsum(f"... i d, ... j d -> ... i j", q, k)
                if mask is not None:
                    mask = mask[:, None, None, :]
                    sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
                attn = sim.softmax(dim=-1, dtype=torch.float32)
                return einsum(f"... i j, ... j d -> ... i d", attn, v)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            # a U-Net's attention block: q (b, n, c) times k (b, c, n), then the values (b, c, n) times the weights'
            # transpose: found, no automatic fix (the layout)
            import torch
            import torch.nn.functional as F
            def attend(q, k, v):
                b, c, h, w = q.shape
                q = q.reshape(b, c, h * w).permute(0, 2, 1)
                k = k.reshape(b, c, h * w)
                w_ = torch.bmm(q, k) * (int(c) ** (-0.5))
                w_ = F.softmax(w_, dim=2)
                v = v.reshape(b, c, h * w)
                return torch.bmm(v, w_.permute(0, 2, 1)).reshape(b, c, h, w)
            """,
            findings=(("7:5-12:45", "hand-written attention: `F.scaled_dot_product_attention` computes it in one fused kernel "
                                     "without storing the L x L weights (2-4x on attention in common reports); no automatic fix: "
                                     "it lays the features out before the positions (…, E, L) in q, k or v, and SDPA wants (…, L, E): "
                                     "transpose them to use it"),),
        ),
        Invalid(
            """
            # the same block with channels-last queries and values: torch.bmm(w, v) at the end
            import torch
            import torch.nn.functional as F
            def attend(q, k, v):
                B, C, H, W = q.shape
                q = q.permute(0, 2, 3, 1).view(B, H * W, C)
                k = k.view(B, C, H * W)
                w = F.softmax(torch.bmm(q, k) * (int(C) ** (-0.5)), dim=-1)
                v = v.permute(0, 2, 3, 1).view(B, H * W, C)
                return torch.bmm(w, v)
            """,
            lines=(6,),
        ),
        Invalid(
            """
            # the softmax is a module the class builds (self.softmax = nn.Softmax(dim=-1)): found, the fix is unsafe
            import torch
            from torch import nn
            class WindowAttention(nn.Module):
                def __init__(self, heads):
                    super().__init__()
                    self.scale = 0.125
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, v):
                    attn = (q * self.scale) @ k.transpose(-2, -1)
                    attn = self.softmax(attn)
                    return attn @ v
            """,
            findings=(("10:9-12:24", "hand-written attention: `F.scaled_dot_product_attention` computes it in one fused kernel "
                                     "without storing the L x L weights (2-4x on attention in common reports); the fix is unsafe: "
                                     "the `self.softmax` module (an nn.Softmax) is left unused"),),
        ),
        Invalid(
            """
            # a module softmax over the positions' other axis (nn.Softmax(dim=1) on (b, L, L) scores): found, unsafe
            import torch
            from torch import nn
            class Affinity(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)
                def forward(self, q, k, v):
                    energy = torch.bmm(q, k.transpose(1, 2))
                    attention = self.softmax(energy)
                    return torch.bmm(attention, v)
            """,
            lines=(9,),
        ),
        Invalid(
            """
            # the scores pass an nn.Identity hook point (for inspecting them): found, the fix is unsafe
            import torch
            from torch import nn
            class ClassAttention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.id = nn.Identity()
                def forward(self, q, k, v):
                    attn = q @ k.transpose(-2, -1)
                    attn = self.id(attn)
                    attn = attn.softmax(dim=-1)
                    return attn @ v
            """,
            lines=(9,),
        ),
        Invalid(
            """
            # einsums over (B, L, H, E) inputs, the positions before the heads: found, no automatic fix
            import torch
            def attend(queries, keys, values, scale):
                scores = torch.einsum("blhe,bshe->bhls", queries, keys)
                A = torch.softmax(scale * scores, dim=-1)
                return torch.einsum("bhls,bshd->blhd", A, values)
            """,
            findings=(
                ("4:5-6:54", "hand-written attention: `F.scaled_dot_product_attention` computes it in one fused kernel "
                             "without storing the L x L weights (2-4x on attention in common reports); no automatic fix: "
                             "its einsums lay q, k or v out in another order than SDPA's (B, H, L, E), such as the "
                             "positions before the heads: permute them to use it"),
            ),
        ),
        Invalid(
            """
            # one key/value head shared by every query head: found, no automatic fix
            import torch
            from torch import einsum
            def attend(q, k, v):
                sim = einsum("b h i d, b j d -> b h i j", q, k)
                attn = sim.softmax(dim=-1)
                return einsum("b h i j, b j d -> b h i d", attn, v)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import torch
            def attend(q, k, v, scale):
                return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
            """,
            findings=(("3:12-3:70", "hand-written attention: `F.scaled_dot_product_attention` computes it in one fused kernel without storing the L x L weights (2-4x on attention in common reports)"),),
            fixed="""
            import torch
            def attend(q, k, v, scale):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            """,
        ),
        Invalid(
            """
            import math
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, mask):
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                scores = scores.masked_fill(mask == 0, float("-inf"))
                weights = F.softmax(scores, dim=-1)
                out = torch.matmul(weights, v)  # (B, H, L, D)
                return out
            """,
            lines=(5,),
            fixed="""
            import math
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, mask):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask != 0, scale=1 / math.sqrt(q.size(-1)))  # (B, H, L, D)
                return out
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn
            class Attention(nn.Module):
                def forward(self, x):
                    q, k, v = self.qkv(x).unbind(0)
                    attn = (q @ k.transpose(-2, -1)) * self.scale
                    attn = attn.softmax(dim=-1)
                    attn = self.attn_drop(attn)
                    x = (attn @ v).transpose(1, 2)
                    return self.proj(x)
            """,
            lines=(6,),
            fixed="""
            import torch
            from torch import nn
            class Attention(nn.Module):
                def forward(self, x):
                    q, k, v = self.qkv(x).unbind(0)
                    x = (nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0, scale=self.scale)).transpose(1, 2)
                    return self.proj(x)
            """,
        ),
        Invalid(
            """
            import torch
            def attend(q, k, v):
                weights = torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1)
                return torch.einsum("bhij,bhjd->bhid", weights, v)
            """,
            lines=(3,),
        ),
        Invalid(
            """
            import torch
            def attend(q, k, v):
                w = torch.bmm(q, k.transpose(1, 2)).softmax(dim=2)
                out = torch.bmm(w, v)
                return out, w
            """,
            lines=(3,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if "softmax" not in ctx.source and "Softmax" not in ctx.source:
            return
        seen: set[int] = set()
        for node in ctx.nodes_of((ast.BinOp, ast.Call)):
            found = match_attention(ctx, node)  # type: ignore[arg-type]
            if found is None or id(found.softmax) in seen or has_sdpa_branch(ctx, node) or weights_feed_the_output(ctx, found):
                continue
            seen.add(id(found.softmax))
            message = (
                "hand-written attention: `F.scaled_dot_product_attention` computes it in one fused kernel without "
                "storing the L x L weights (2-4x on attention in common reports)"
            )
            blocked = why_not_fixable(ctx, found)
            if blocked:
                message += f"; no automatic fix: {blocked}"
            elif found.unsafe:
                message += f"; the fix is unsafe: {'; '.join(dict.fromkeys(found.unsafe))}"
            yield Report(_span_node(found), message, fix=lambda found=found: attention_fix(ctx, found))
