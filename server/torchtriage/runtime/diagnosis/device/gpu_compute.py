"""What a compute verdict on a GPU run should advise: the GPU's busy share decides whose time it is.

When the GPU runs kernels most of the step, faster kernels shorten it (bf16, TF32, attention
kernels, autotuned compiles).  When it is idle most of the step (under :data:`GPU_STARVED`), the
ops' time is the host running them while the GPU waits (copies of CPU tensors, host-side
preprocessing, chains of small ops), and the advice says so first.  Seen on real traces: HTA's
``nccl_data`` trace is 78% "compute" with the GPU busy 24% of the step.
"""

from __future__ import annotations

from typing import Optional

from ...results.profile_data import ProfileData
from ...results.verdicts import Evidence, Recommendation

GPU_STARVED = 0.5  # under this GPU busy share, a compute verdict's time is the host running ops, not the kernels
ATTENTION_OPS = ("softmax", "scaled_dot_product", "attention")  # op names that show attention is computed


def gpu_busy_share(profile: ProfileData) -> Optional[float]:
    """The share of the recorded steps' time the GPU had a kernel, copy or memset running (None: not measured)."""
    block = profile.extra.get("gpu_busy")
    if isinstance(block, dict) and isinstance(block.get("share"), (int, float)):
        return float(block["share"])
    busy, window = profile.extra.get("gpu_busy_us"), sum(s.duration_us for s in profile.steps)
    return min(1.0, float(busy) / window) if isinstance(busy, (int, float)) and busy > 0 and window > 0 else None


def host_bound(profile: ProfileData) -> tuple[list[Evidence], list[Recommendation]]:
    """Evidence and advice when the GPU idles most of the step (nothing otherwise)."""
    busy = gpu_busy_share(profile)
    if busy is None or busy >= GPU_STARVED:
        return [], []
    evidence = Evidence(f"The GPU is busy only {busy * 100:.0f}% of the step: the ops' time is the host's (the CPU running "
                        "them while the GPU waits), so faster kernels would not shorten the step")
    return [evidence], [
        Recommendation(
            "Find what the host runs while the GPU idles, and move it to the GPU or out of the step",
            "Copies of CPU tensors, host-side preprocessing and chains of small ops keep the CPU busy between "
            "launches; the largest GPU idle gaps name the op and line in each.",
            "batch = batch.to(device, non_blocking=True)  # once, then compute on the device",
        ),
        Recommendation(
            "Launch less per step: torch.compile, or CUDA graphs (mode='reduce-overhead')",
            "Fused kernels and a replayed graph leave the CPU less to do between the GPU's kernels.",
            "model = torch.compile(model, mode='reduce-overhead')",
        ),
    ]


def kernel_advice(profile: ProfileData) -> list[Recommendation]:
    """Faster kernels: worth trying once the GPU is what sets the pace."""
    recs = [
        Recommendation(
            "Train in bf16 autocast",
            "Up to ~2x on transformers on Ampere or newer, no GradScaler needed; under 20% gain means "
            "precision is not the limit.",
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)",
        ),
    ]
    if any(word in op.name.lower() for op in profile.ops for word in ATTENTION_OPS):
        recs.append(Recommendation(
            "Use scaled_dot_product_attention for attention",
            "Flash / memory-efficient kernels are 2-4x faster on attention.",
            "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
        ))
    recs += [
        Recommendation(
            "Allow TF32 and keep dims multiples of 8",
            "Tensor Cores need friendly shapes; fp32 matmuls skip them unless TF32 is allowed.",
            "torch.set_float32_matmul_precision('high')",
        ),
        Recommendation("Try torch.compile(mode='max-autotune')", "Fuses elementwise ops and picks faster matmul kernels."),
    ]
    return recs
