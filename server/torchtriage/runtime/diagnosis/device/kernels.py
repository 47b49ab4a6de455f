"""Which GPU kernels ran on the Tensor Cores, told from their names.

A trace does not say which unit a kernel used; its name does.  cuBLAS, cuDNN
and CUTLASS name their Tensor-Core kernels after the MMA instruction shape or
the data type they multiply on it (``h884``, ``s1688``, ``16816``, ``hmma``,
``tensorop``, ``tf32``, ``bf16``, ``f16``...), and their CUDA-core kernels
after the FP32 FMA loop (``sgemm``, ``simt``, ``ffma``).  TensorBoard's
profiler plugin took any ``xmma_gemm`` kernel for a Tensor-Core one; on an
H100 cuBLAS ran this project's plain fp32 matmuls (big_matmul, TF32 off) as
``sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...``: ``ffma`` is the CUDA cores'
fp32 multiply-add, so a CUDA-core mark wins over ``xmma`` here unless the
name also says ``tf32``.  cuBLAS's ``nvjet`` kernels carry neither: their type code says (``_nvjet_on_tensor_cores``).
"""

from __future__ import annotations

MMA_MARKS = ("h884", "s884", "h1688", "s1688", "i8816", "16816", "c1688", "hmma", "imma", "gmma", "tensorop", "wmma",
             "flash_fwd", "flash_bwd", "fmha")  # an MMA instruction shape or a Tensor-Core library kernel
MATH_KERNELS = ("gemm", "conv", "fprop", "dgrad", "wgrad")
DTYPE_MARKS = ("xmma", "tf32", "bf16", "f16", "cutlass3x")  # in a matmul / convolution kernel: its Tensor-Core dtype
CUDA_CORE_MARKS = ("ffma", "simt", "sgemm", "dgemm", "hgemm_nt_simt")


def _nvjet_on_tensor_cores(low: str) -> bool | None:
    """cuBLAS's ``nvjet`` GEMMs (CUDA 12.8+, Hopper and later; ``nvjet_sm90_hsh_256x128_...`` ran fp16 autocast's
    matmuls on an H200) name their types after the architecture: ``h`` half, ``b`` bf16, ``t`` TF32, ``e``
    fp8 run on the Tensor Cores; an all-``s`` / ``d`` code (fp32, fp64) on the CUDA cores.  None: not one."""
    parts = low.split("_")
    if parts[0] != "nvjet" or len(parts) < 3:
        return None
    code = parts[2] if parts[1].startswith("sm") else parts[1]
    return not set(code) <= {"s", "d"}


def is_tensor_core_kernel(name: str) -> bool:
    """Whether the kernel's name says it ran on the Tensor Cores (a CUDA-core mark without TF32 says it did not)."""
    low = name.lower()
    nvjet = _nvjet_on_tensor_cores(low)
    if nvjet is not None:
        return nvjet
    if any(mark in low for mark in MMA_MARKS):
        return True
    if not any(kind in low for kind in MATH_KERNELS):
        return False
    if "tf32" not in low and any(mark in low for mark in CUDA_CORE_MARKS):
        return False
    return any(mark in low for mark in DTYPE_MARKS)
