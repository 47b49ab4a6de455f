"""TT508 hand-written attention: the shapes it recognises, the fix it offers, and that the fix computes the same thing."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path

import pytest
import torch

from torchtriage.analysis import analyze_source, fix_source
from torchtriage.config import Settings

SETTINGS = Settings(select=("TT508",))
FIXTURES = Path(__file__).parents[2] / "fixtures" / "fixes" / "TT508"
HEADER = "import math\nimport torch\nimport torch.nn.functional as F\n\n"


def findings(source: str):
    return [f for f in analyze_source(HEADER + textwrap.dedent(source), settings=SETTINGS) if f.code == "TT508"]


def load(source: str, name: str = "attend"):
    module = types.ModuleType("case")
    exec(compile(source, "<case>", "exec"), module.__dict__)  # noqa: S102 - the test's own code
    return getattr(module, name)


def inputs():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    mask = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    return q, k, v, mask


# (source of attend(q, k, v, mask), applicability of the fix: "safe" | "unsafe" | None for none)
POSITIVES = {
    "one expression, scale": (
        """
        def attend(q, k, v, mask):
            return torch.softmax(q @ k.transpose(-2, -1) * 0.3, dim=-1) @ v
        """, "safe"),
    "divide by sqrt(d), torch.matmul, mask before softmax": (
        """
        def attend(q, k, v, mask):
            d = q.size(-1)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
            scores = scores.masked_fill(~mask, float("-inf"))
            probs = scores.softmax(dim=-1)
            return torch.matmul(probs, v)
        """, "safe"),
    "no scale at all (SDPA needs scale=1.0)": (
        """
        def attend(q, k, v, mask):
            w = F.softmax(q @ k.mT, dim=-1)
            out = w @ v
            return out
        """, "safe"),
    "key transposed on its own line, permute": (
        """
        def attend(q, k, v, mask):
            kt = k.permute(0, 1, 3, 2)
            att = q.matmul(kt) * q.shape[-1] ** -0.5
            att = att.softmax(-1)
            return att.matmul(v)
        """, "safe"),
    "einsum both ways": (
        """
        def attend(q, k, v, mask):
            s = torch.einsum("bhqd,bhkd->bhqk", q, k) / 3.0
            return torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        """, "safe"),
    "a finite fill value": (
        """
        def attend(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)).masked_fill(mask == 0, -1e9)
            return s.softmax(-1) @ v
        """, "unsafe"),
    "dropout after the softmax": (
        """
        def attend(q, k, v, mask, p=0.1, training=False):
            a = F.softmax(q @ k.transpose(-2, -1), dim=-1)
            a = F.dropout(a, p=p, training=training)
            return a @ v
        """, "unsafe"),
    "transpose of unknown rank": (
        """
        def attend(q, k, v, mask):
            return (q @ k.transpose(2, 3)).softmax(-1) @ v
        """, "unsafe"),
    "upcast softmax cast back": (
        """
        def attend(q, k, v, mask):
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1, dtype=torch.float32).to(q.dtype)
            return w @ v
        """, "unsafe"),
    "the weights are returned too": (
        """
        def attend(q, k, v, mask):
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            return w @ v, w
        """, None),
    "something else between the steps": (
        """
        def attend(q, k, v, mask):
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            print("weights ready")
            return w @ v
        """, None),
}

LOOK_ALIKES = {
    "classification softmax": """
        def predict(model, x):
            logits = model(x)
            probs = F.softmax(logits, dim=-1)
            return probs.argmax(-1), probs
        """,
    "a matmul chain that is not attention": """
        def mlp(x, w1, w2, w3):
            h = torch.relu(x @ w1.transpose(-2, -1))
            h = torch.tanh(h @ w2)
            return h @ w3
        """,
    "attention pooling: softmax over a projection, no key transpose": """
        def pool(x, score):
            w = torch.softmax(score(x).squeeze(-1), dim=-1)
            return torch.bmm(w.unsqueeze(1), x)
        """,
    "mixture-of-experts gate": """
        def mix(x, gate, experts):
            weights = F.softmax(gate(x), dim=-1)
            return weights @ experts
        """,
    "softmax of a matmul used elementwise": """
        def gated(q, k, v):
            g = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            return (g * v).sum(-1)
        """,
    "already SDPA": """
        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """,
}


@pytest.mark.parametrize("name", POSITIVES)
def test_recognised_shapes_get_the_expected_fix(name: str) -> None:
    source, applicability = POSITIVES[name]
    [finding] = findings(source)
    assert finding.name == "hand-written-attention" and "scaled_dot_product_attention" in finding.message
    if applicability is None:
        assert finding.fix is None and "no automatic fix" in finding.message
    else:
        assert finding.fix is not None and finding.fix.applicability.value == applicability
        assert ("the fix is unsafe" in finding.message) == (applicability == "unsafe")


@pytest.mark.parametrize("name", [n for n, (_, a) in POSITIVES.items() if a is not None and "dropout" not in n])
def test_the_fix_computes_the_same_attention(name: str) -> None:
    source = HEADER + textwrap.dedent(POSITIVES[name][0])
    fixed = fix_source(source, settings=SETTINGS, unsafe=True)
    assert fixed.applied == 1 and "scaled_dot_product_attention" in fixed.source and "softmax" not in fixed.source
    before, after = load(source)(*inputs()), load(fixed.source)(*inputs())
    assert torch.allclose(before, after, atol=1e-5), (before - after).abs().max()


def test_safe_fixes_apply_without_unsafe_and_unsafe_ones_do_not() -> None:
    safe = HEADER + textwrap.dedent(POSITIVES["divide by sqrt(d), torch.matmul, mask before softmax"][0])
    unsafe = HEADER + textwrap.dedent(POSITIVES["a finite fill value"][0])
    assert fix_source(safe, settings=SETTINGS).applied == 1
    assert fix_source(unsafe, settings=SETTINGS).source == unsafe


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_look_alikes_stay_quiet(name: str) -> None:
    assert findings(LOOK_ALIKES[name]) == []


def test_the_finding_spans_every_step_of_the_computation() -> None:
    [finding] = findings(POSITIVES["divide by sqrt(d), torch.matmul, mask before softmax"][0])
    first = HEADER.count("\n") + 3  # the ``scores = ...`` line after ``def`` and ``d = ...``
    assert (finding.span.line, finding.span.end_line) == (first + 1, first + 4)


@pytest.mark.parametrize("module", ["causal_self_attention", "bert_self_attention_unsafe", "window_attention_unsafe"])
def test_golden_fixes_keep_the_module_s_output(module: str) -> None:
    """The fixture modules before and after the fix, same weights, same input: same output (eval mode: no dropout)."""
    outputs = []
    for suffix in (".in.py", ".out.py"):
        source = (FIXTURES / f"{module}{suffix}").read_text(encoding="utf-8")
        torch.manual_seed(0)
        if module.startswith("causal"):
            block = load(source, "CausalSelfAttention")(32, 4, 16).eval()
            args = (torch.randn(2, 10, 32),)
        elif module.startswith("window"):  # a module softmax and an additive per-head bias
            block = load(source, "WindowAttention")(32, 4).eval()
            args = (torch.randn(2, 49, 32),)
        else:
            block = load(source, "SelfAttention")(32, 4).eval()
            mask = torch.zeros(2, 1, 1, 10)
            mask[0, ..., 7:] = -10000.0  # padding of the first sequence, as BERT's extended mask
            args = (torch.randn(2, 10, 32), mask)
        with torch.no_grad():
            outputs.append(block(*args))
    assert torch.allclose(outputs[0], outputs[1], atol=1e-5)
