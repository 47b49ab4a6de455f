"""Tensor Cores: matmul/convolution shapes they cannot tile, and fp32 matmuls with TF32 off (CUDA).

Tensor Cores multiply tiles of fixed size; cuBLAS and cuDNN use them at full
rate when the dimensions are multiples of 8 elements in fp16/bf16 and of 4 in
TF32 (NVIDIA's matrix-multiplication guide; for A100-class GPUs multiples of
64 bytes are better still).  Among the matmuls and convolutions with the most
GPU time (``ShapeCost``, from the profiler's ``record_shapes``):

* TTR601 ``runtime-tensor-core-shape``: dims that are not such multiples, per
  line, with the shapes and the GPU time those ops take per step.  For a
  matmul ``A[M, K] @ B[K, N]`` all of M, K and N count; for a convolution the
  input and output channels (an input of at most 4 channels, an image, is
  left alone: cuDNN pads it).
* TTR602 ``runtime-fp32-matmul-no-tf32``: fp32 matmuls on a GPU of compute
  capability 8.0 or newer while ``torch.get_float32_matmul_precision()`` is
  "highest" (``torch.backends.cuda.matmul.allow_tf32`` off, PyTorch's
  default): they run on the CUDA cores, not the Tensor Cores.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from ....findings import Finding
from ...results.device_facts import ShapeCost
from ...results.profile_data import ProfileData
from .constructor import device_finding
from ...results.verdicts import Evidence, Recommendation

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
CONVOLUTIONS = ("aten::convolution", "aten::convolution_backward")
MULTIPLE = {"float16": 8, "bfloat16": 8, "float32": 4}  # elements per Tensor Core tile edge; float32 only as TF32
MIN_GPU_SHARE = 0.01  # a shape op must take this much of the GPU time to be worth naming
TOP_SHAPES = 10
IMAGE_CHANNELS = 4  # a convolution input with this many channels or fewer is an image: cuDNN pads it



def problem_dims(shape: ShapeCost, multiple: int) -> dict[str, int]:
    """The dims of ``shape`` that are not multiples of ``multiple`` ({"K": 1000, "N": 30522})."""
    if len(shape.dims) != 2 or not all(shape.dims):
        return {}
    a, b = shape.dims
    if shape.op in MATMULS:
        if len(a) < 2 or len(b) < 2:
            return {}
        named = {"M": a[-2], "K": a[-1], "N": b[-1]}
    elif shape.op in CONVOLUTIONS:
        if len(a) < 2 or not b:
            return {}
        named = {"out channels": b[0]}
        if a[1] > IMAGE_CHANNELS:
            named = {"in channels": a[1], **named}
    else:
        return {}
    return {name: value for name, value in named.items() if value % multiple}


def tile_multiple(profile: ProfileData, shape: ShapeCost) -> int | None:
    """The multiple Tensor Cores need of ``shape``'s dims on this run, or None when they cannot run it at all
    (plain fp32 without TF32, other dtypes)."""
    multiple = MULTIPLE.get(shape.dtype)
    if shape.dtype == "float32" and not (_ampere(profile) and _tf32_on(profile, shape.op)):
        return None
    return multiple


def _tf32_on(profile: ProfileData, op: str) -> bool:
    facts = profile.device_facts
    if facts is None:
        return False
    if op in CONVOLUTIONS:
        return facts.cudnn_allow_tf32
    return facts.allow_tf32 or facts.float32_matmul_precision != "highest"


def _ampere(profile: ProfileData) -> bool:
    facts = profile.device_facts
    return bool(facts and facts.capability and facts.capability >= (8, 0))


def _top_shapes(profile: ProfileData) -> list[ShapeCost]:
    total = sum(s.gpu_us for s in profile.shapes)
    return [s for s in profile.shapes if total > 0 and s.gpu_us >= MIN_GPU_SHARE * total and s.path][:TOP_SHAPES]


def shape_text(shape: ShapeCost) -> str:
    """``aten::mm 4096x1000 @ 1000x30522 (bfloat16)``."""
    joiner = " @ " if shape.op in MATMULS else " * "
    return f"{shape.op} {joiner.join('x'.join(map(str, d)) for d in shape.dims)} ({shape.dtype})"


def _padded(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _shape_finding(profile: ProfileData, shapes: list[tuple[ShapeCost, int, dict[str, int]]], window_us: float) -> Finding:
    n = max(1, profile.steps_profiled)
    gpu_us = sum(s.gpu_us for s, _, _ in shapes)
    first, multiple, dims = shapes[0]
    named = ", ".join(f"{k}={v}" for k, v in dims.items())
    message = (
        f"{shape_text(first)}: {named} {'is' if len(dims) == 1 else 'are'} not {'a multiple' if len(dims) == 1 else 'multiples'} of {multiple}, "
        f"so the Tensor Cores cannot tile {'it' if len(dims) == 1 else 'them'} at full rate; these ops take {gpu_us / n / 1000:.2f} ms of GPU time per step"
    )
    evidence = [
        Evidence(f"{shape_text(s)}: {', '.join(f'{k}={v}' for k, v in d.items())} not multiples of {m}; "
                 f"{s.calls / n:.1f} calls and {s.gpu_us / n / 1000:.2f} ms GPU time per step", s.path, s.line)
        for s, m, d in shapes
    ]
    padding = ", ".join(f"{k} {v} -> {_padded(v, multiple)}" for k, v in dims.items())
    recommendations = [
        Recommendation(
            f"Pad the dimensions to multiples of {multiple} ({padding})",
            "Tensor Cores multiply fixed-size tiles: an odd hidden size, vocabulary or channel count makes cuBLAS/cuDNN fall "
            "back to slower kernels or pad every call. Padding a vocabulary or hidden size once (and ignoring the extra rows) "
            "is the usual fix; a batch or sequence length can be padded or bucketed.",
            f"nn.Linear(in_features, {_padded(next(iter(dims.values())), 64)})  # e.g. a vocabulary padded to a multiple of 64",
        ),
    ]
    share = min(1.0, gpu_us / window_us) if window_us > 0 else 0.0
    return device_finding("TTR601", first.path, first.line, message, share, gpu_us / n, evidence, recommendations)


def _tf32_finding(profile: ProfileData, fp32: list[ShapeCost], window_us: float) -> Finding:
    n = max(1, profile.steps_profiled)
    gpu_us = sum(s.gpu_us for s in fp32)
    by_line: dict[tuple[str, int], float] = defaultdict(float)
    for s in fp32:
        by_line[(s.path, s.line)] += s.gpu_us
    (path, line), _ = max(by_line.items(), key=lambda kv: (kv[1], kv[0]))
    facts = profile.device_facts
    major, minor = facts.capability if facts and facts.capability else (0, 0)
    share = min(1.0, gpu_us / window_us) if window_us > 0 else 0.0
    message = (
        f"fp32 matmuls take {gpu_us / n / 1000:.2f} ms of GPU time per step ({share * 100:.0f}% of the step) on "
        f"{profile.device_name or 'this GPU'} (compute capability {major}.{minor}) with TF32 off "
        f"(float32_matmul_precision='{facts.float32_matmul_precision if facts else 'highest'}'): they run on the CUDA cores, "
        "not the Tensor Cores; torch.set_float32_matmul_precision('high') or bf16 autocast moves them there"
    )
    evidence = [
        Evidence(f"{shape_text(s)}: {s.gpu_us / n / 1000:.2f} ms GPU time per step", s.path, s.line)
        for s in sorted(fp32, key=lambda s: -s.gpu_us)[:3]
    ]
    recommendations = [
        Recommendation(
            "Allow TF32 for fp32 matmuls: torch.set_float32_matmul_precision('high')",
            "TF32 keeps fp32 storage and range and rounds the multiply's inputs to a 10-bit mantissa; on Ampere and newer it "
            "runs fp32 matmuls on the Tensor Cores, several times faster. Check that the loss curve is unchanged.",
            "torch.set_float32_matmul_precision('high')  # once, before training",
        ),
        Recommendation(
            "Or train in bf16 autocast",
            "Up to ~2x on transformers on Ampere or newer, no GradScaler needed; the matmuls then run in bf16 on the Tensor Cores.",
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)",
        ),
    ]
    return device_finding("TTR602", path, line, message, share, gpu_us / n, evidence, recommendations)


def tensor_core_findings(profile: ProfileData) -> list[Finding]:
    """TTR601 per line with unfriendly shapes among the top GPU ops; TTR602 once for fp32 matmuls without TF32."""
    if profile.device != "cuda":
        return []
    window_us = sum(s.duration_us for s in profile.steps)
    out: list[Finding] = []
    by_line: dict[tuple[str, int], list[tuple[ShapeCost, int, dict[str, int]]]] = defaultdict(list)
    for shape in _top_shapes(profile):
        multiple = tile_multiple(profile, shape)
        if multiple is None:
            continue  # plain fp32 never uses Tensor Cores: TTR602's business
        dims = problem_dims(shape, multiple)
        if dims:
            by_line[(shape.path, shape.line)].append((shape, multiple, dims))
    for shapes in by_line.values():
        out.append(_shape_finding(profile, shapes, window_us))
    fp32 = [s for s in profile.shapes if s.dtype == "float32" and s.path and s.gpu_us > 0 and not _tf32_on(profile, s.op)]
    if _ampere(profile) and fp32:
        out.append(_tf32_finding(profile, fp32, window_us))
    return out


def shapes_json(profile: ProfileData, source: Any, limit: int = 20) -> list[dict[str, Any]]:
    """report.json's ``matmul_shapes``: the top signatures per step with their line and, on CUDA, the dims
    Tensor Cores cannot tile (``misaligned``: empty on CPU, for plain fp32 and other dtypes); none when the
    shapes were not recorded."""
    n = max(1, profile.steps_profiled)
    rows = []
    for s in [s for s in profile.shapes if s.dims][:limit]:
        multiple = tile_multiple(profile, s) if profile.device == "cuda" else None
        rows.append({
            "op": s.op,
            "dtype": s.dtype,
            "dims": s.dims,
            "calls_per_step": round(s.calls / n, 3),
            "cpu_ms_per_step": round(s.cpu_us / n / 1000.0, 4),
            "gpu_ms_per_step": round(s.gpu_us / n / 1000.0, 4),
            "path": s.path or None,
            "line": s.line or None,
            "source": source.get(s.path, s.line) if s.path else "",
            "misaligned": problem_dims(s, multiple) if multiple else {},
        })
    return rows


__all__: Sequence[str] = ("problem_dims", "shapes_json", "tensor_core_findings")
