"""Which kernels ran on the Tensor Cores, by name: names from the traces this project recorded on an H100 and an H200."""

from __future__ import annotations

import pytest

from torchtriage.runtime.diagnosis.device.kernels import is_tensor_core_kernel


@pytest.mark.parametrize("name, tensor_cores", [
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", True),  # fp16 autocast's GEMM on the H200 (cuBLAS 13)
    ("nvjet_tst_128x128_64x4_2x1_v_bz_coopA_TNN", True),  # a TF32 one
    ("nvjet_sm90_sss_128x64_64x4_1x1_v_bz_NNT", False),  # an fp32 code: CUDA cores
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas", False),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)", False),
    ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)", True),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::float16_copy_kernel_cuda>", False),
])
def test_kernel_names(name: str, tensor_cores: bool) -> None:
    assert is_tensor_core_kernel(name) is tensor_cores
