"""Code that runs only on an accelerator other than CUDA (Intel XPU, Apple MPS, Ascend NPU, Habana HPU,
XLA/TPU): CUDA-only rules (TT301's blocking host-to-CUDA copy) do not apply there.

Three shapes: a device named in the call (``x.to("xpu:0")``, ``x.to(torch.device(f"xpu:{rank}"))``), a
branch taken only on such a device (``if is_xpu_available(): ...``, ``if mps: ...``; its ``else`` is
the CUDA path), and the branch a CUDA test leaves to the other devices (nanoGPT's ``if device_type == "cuda":
... pinned copies ... else: x, y = x.to(device), y.to(device)``).  Seen in held-out repositories: llama-recipes'
XPU branches, yolov5's MPS branch.
"""

from __future__ import annotations

import ast
import re

from .base import RuleContext

OTHER_ACCELERATORS = ("xpu", "mps", "npu", "hpu", "xla", "tpu")
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def names_other_accelerator(node: ast.AST) -> bool:
    """Whether an expression names a non-CUDA accelerator: ``"xpu:0"``, ``f"xpu:{rank}"``,
    ``torch.device("mps")``, ``is_xpu_available()``, ``mps``, ``args.use_npu``."""
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            text = child.value
        elif isinstance(child, ast.Name):
            text = child.id
        elif isinstance(child, ast.Attribute):
            text = child.attr
        else:
            continue
        if _words(text) & set(OTHER_ACCELERATORS):
            return True
    return False


def _tests_cuda(test: ast.expr) -> bool:
    """``device_type == "cuda"``, ``device.type != "cuda"``, ``torch.cuda.is_available()``, ``not use_cuda``: a test
    of whether the run is on CUDA, whose other branch runs off it (the CPU or another accelerator)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        return any(isinstance(side, ast.Constant) and side.value == "cuda" for side in (test.left, *test.comparators))
    if isinstance(test, ast.Call):
        return isinstance(test.func, ast.Attribute) and test.func.attr == "is_available" and "cuda" in ast.unparse(test.func)
    if isinstance(test, (ast.Name, ast.Attribute)):
        words = _words(test.id if isinstance(test, ast.Name) else test.attr)
        return "cuda" in words and not words & _NEGATING  # (``args.no_cuda`` says the opposite: not guessed)
    return False


_NEGATING = frozenset({"no", "not", "disable", "disabled", "without", "cpu"})


def _negated(test: ast.expr) -> bool:
    """``not mps``, ``device.type != "mps"``, ``dev is not xpu``: the test holds off that device."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.NotEq, ast.IsNot, ast.NotIn))


def on_other_accelerator(ctx: RuleContext, call: ast.Call) -> bool:
    """A device move to a non-CUDA device (its argument names one), or a call in the body of an ``if``
    whose test names one (not in its ``else``)."""
    if any(names_other_accelerator(arg) for arg in [*call.args, *(k.value for k in call.keywords if k.arg == "device")]):
        return True
    child: ast.AST = call
    for parent in ctx.ancestors(call):
        if isinstance(parent, (ast.If, ast.IfExp)):
            branch = _off_cuda_branch(parent)
            if branch is not None and any(child is stmt for stmt in (branch if isinstance(branch, list) else [branch])):
                return True
        elif isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        child = parent
    return False


def _off_cuda_branch(branching: ast.If | ast.IfExp) -> list[ast.stmt] | ast.expr | None:
    """The branch of an ``if`` that runs off CUDA: the one a test naming another accelerator picks (``if mps:``;
    the else of ``if not mps:``), or the one a CUDA test leaves (the else of ``if device_type == "cuda":``)."""
    test = branching.test
    if names_other_accelerator(test):
        return branching.orelse if _negated(test) else branching.body
    if _tests_cuda(test):
        return branching.body if _negated(test) else branching.orelse
    return None
