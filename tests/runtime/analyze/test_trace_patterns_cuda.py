"""The pattern findings on CUDA traces: the H100 traces of ``tests/data/runtime/cuda`` where they show a pattern,
and the smallest synthetic traces (``synthetic_trace.py``) for the rules none of them exhibits.  No GPU needed.

Real: big_matmul runs its five fp32 GEMMs a step with TF32 off on an H100 (TTR602, costing the GEMMs' GPU
time summed from the JSON by hand); none of its kernels is a Tensor-Core one although one is named
``..._xmma_gemm_..._ffma_...`` (TensorBoard's plugin would have counted it), and TTR606 leaves that case to
TTR602.  sync_every_step_v1 (the first version of that example, loader-bound on the H100) keeps the GPU
busy under half the step (TTR605).  The trimmed traces have no Python frames, so their patterns have no
line and give no finding, but the facts are kept: device_moves fills a CPU tensor and copies it to the GPU
every step, tiny_ops steps Adam(foreach=False) tensor by tensor.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from torchtriage.runtime.diagnosis.device.kernels import is_tensor_core_kernel
from torchtriage.runtime.offline.analyze import AnalyzedRun, analyze_trace
from synthetic_trace import SyntheticTrace, device
from trace_recording import CUDA, check_schema, gpu_busy_by_hand, line_of

ROOT = CUDA.parents[3]  # the checkout: the traces name /work/main/examples/*.py, found here by their tail
GIB = 2**30
H100_BYTES = 85017493504


def trace_of(case: str) -> Path:
    folder = CUDA / case
    full = folder / "trace.json.gz"
    return full if full.exists() else folder / "trace_trimmed.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AnalyzedRun]:
    out = {}
    for case in ("big_matmul", "sync_every_step_v1", "device_moves", "tiny_ops"):
        run = analyze_trace(trace_of(case), out_dir=tmp_path_factory.mktemp(case) / "run", roots=(ROOT,))
        assert run.report is not None, run.profile.warnings
        check_schema(run.report)
        out[case] = run
    return out


def found(run: AnalyzedRun, code: str) -> list[dict[str, Any]]:
    assert run.report is not None
    return [f for f in run.report["runtime_findings"] if f["code"] == code]


def patterns(run: AnalyzedRun, kind: str) -> list[dict[str, Any]]:
    return [p for p in run.profile.extra["trace_patterns"]["patterns"] if p["kind"] == kind]


def events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["traceEvents"]


def gemm_gpu_us_by_hand(path: Path) -> float:
    """GPU time per step of the kernels launched inside aten::mm / aten::addmm calls that start in a ProfilerStep
    range on the CPU: each launch (a runtime or driver call) nested by time in such an op on its thread, its
    kernel found by correlation id."""
    evs = [e for e in events(path) if e.get("ph") == "X"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    ops = [e for e in evs if e.get("cat") == "cpu_op" and e["name"] in ("aten::mm", "aten::addmm")
           and any(lo <= e["ts"] < hi for lo, hi in steps)]
    inside = set()
    for launch in (e for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver")):
        if any(o["tid"] == launch["tid"] and o["ts"] <= launch["ts"] < o["ts"] + o["dur"] for o in ops):
            inside.add(launch["args"]["correlation"])
    gpu = sum(e["dur"] for e in evs if e.get("cat") == "kernel" and e["args"].get("correlation") in inside)
    return gpu / len(steps)


def test_big_matmul_fp32_matmuls_with_tf32_off(runs: dict[str, AnalyzedRun]) -> None:
    run = runs["big_matmul"]
    script = ROOT / "examples" / "big_matmul.py"
    [tf32] = found(run, "TTR602")
    # The trace names /work/main/examples/big_matmul.py: that file where it exists, else its tail under ROOT.
    assert Path(tf32["path"]).as_posix().endswith("/examples/big_matmul.py") and Path(tf32["path"]).is_file()
    assert tf32["line"] == line_of("out = model(data)", script)
    assert tf32["self_ms_per_step"] * 1000 == pytest.approx(gemm_gpu_us_by_hand(trace_of("big_matmul")), rel=0.02)
    assert 0 < tf32["self_ms_per_step"] <= run.report["step_time_ms"]
    facts = run.profile.device_facts
    assert facts is not None and facts.capability == (9, 0) and facts.total_bytes == H100_BYTES
    assert facts.float32_matmul_precision == "highest" and not facts.allow_tf32  # inferred from the kernels' names
    assert 0 < facts.allocated_peak_bytes < 0.9 * H100_BYTES and not found(run, "TTR703")
    assert any("TF32 setting is read from" in w for w in run.profile.warnings)
    kernels = [op.name for op in run.profile.ops if op.device == "cuda"]
    assert any("xmma_gemm" in k and "ffma" in k for k in kernels)  # TensorBoard's allow-list counted this one
    assert not any(is_tensor_core_kernel(k) for k in kernels)
    assert not found(run, "TTR606")  # no Tensor-Core time, but TTR602 says it (TF32 or bf16)
    assert not found(run, "TTR605") and run.report["gpu_busy"]["share"] > 0.9
    shapes = {(s["op"], s["dtype"]) for s in run.report["matmul_shapes"]}
    assert ("aten::mm", "float32") in shapes and ("aten::addmm", "float32") in shapes


def test_a_gpu_busy_under_half_the_step(runs: dict[str, AnalyzedRun]) -> None:
    run = runs["sync_every_step_v1"]
    [under] = found(run, "TTR605")
    trace = trace_of("sync_every_step_v1")
    shares = gpu_busy_by_hand(trace)
    steps = sorted((e["ts"], e["dur"]) for e in events(trace)
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    busy = sum(share * d for share, (_, d) in zip(shares, steps)) / sum(d for _, d in steps)
    assert under["details"]["gpu_busy_share"] == pytest.approx(busy, abs=1e-3) and busy < 0.5
    assert under["share"] == pytest.approx(1 - busy, abs=1e-3)
    assert (under["path"], under["line"]) == (run.report["hotspots"][0]["path"], run.report["hotspots"][0]["line"])
    assert 0 < under["self_ms_per_step"] <= run.report["step_time_ms"]


def test_traces_without_python_frames_keep_the_facts_but_place_no_finding(runs: dict[str, AnalyzedRun]) -> None:
    moves = runs["device_moves"]
    [moved] = patterns(moves, "created_then_moved")  # noise = torch.zeros(images.shape).to(device)
    assert moved["details"]["sizes"] == "512x1024" and moved["line"] == 0 and moved["us"] > 0 and moved["gpu_us"] > 0
    zeros = [e for e in events(trace_of("device_moves")) if e.get("name") == "aten::zeros" and e.get("cat") == "cpu_op"]
    assert moved["count"] == len(zeros) >= 2  # once for each step the trimmed trace keeps
    assert not found(moves, "TTR305")
    [single] = patterns(runs["tiny_ops"], "single_tensor_optimizer")  # Adam(..., foreach=False)
    assert single["details"] == {"optimizer": "Adam", "implementation": "for-loop"} and single["us"] > 0
    assert not patterns(runs["big_matmul"], "single_tensor_optimizer")  # SGD on CUDA: foreach by default
    assert not patterns(runs["sync_every_step_v1"], "single_tensor_optimizer")  # Adam on CUDA: foreach by default


# -- synthetic traces ------------------------------------------------------------------------------------
def analyze(trace: SyntheticTrace, tmp_path: Path) -> AnalyzedRun:
    run = analyze_trace(trace.write(tmp_path / "trace.json"), out_dir=tmp_path / "run")
    assert run.report is not None, run.profile.warnings
    check_schema(run.report)
    return run


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_synthetic_a_cpu_tensor_filled_then_copied_to_the_gpu(tmp_path: Path) -> None:
    source = script(tmp_path, "import torch\n\n\ndef step(x):\n    noise = torch.zeros(64, 128)\n    moved = noise.to('cuda')\n"
                              "    return x + moved\n")

    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(4, "step", s + 10, 500)
        t.call("zeros", s + 20, 60)
        t.op("aten::zeros", s + 22, 55)
        t.op("aten::empty", s + 23, 5)
        t.op("aten::zero_", s + 30, 40, ["float"], [[64, 128]])
        t.call("to", s + 100, 100)
        t.op("aten::to", s + 102, 95, ["float", "Scalar"], [[64, 128], []])
        t.op("aten::_to_copy", s + 104, 90, ["float", "Scalar"], [[64, 128], []])
        t.op("aten::copy_", s + 110, 80, ["float", "float", "Scalar"], [[64, 128], [64, 128], []])
        t.launch(s + 120, 30, "Memcpy HtoD (Pageable -> Device)", s + 130, 20, runtime="cudaMemcpyAsync", category="gpu_memcpy")

    run = analyze(SyntheticTrace(source, [device("NVIDIA A100", 8, 0, 40 * GIB)]).steps(fill), tmp_path)
    [moved] = found(run, "TTR305")
    assert moved["line"] == line_of("moved = noise.to('cuda')", source)
    assert moved["self_ms_per_step"] == pytest.approx((60 + 95 + 20) / 1000)  # the zeros call, the copy, the copy on the GPU


def test_synthetic_data_parallel_on_two_gpus(tmp_path: Path) -> None:
    source = script(tmp_path, "from torch import nn\n\n\ndef build(net):\n    model = nn.DataParallel(net)\n    return model\n\n\n"
                              "def step(model, x):\n    out = model(x)\n    return out\n")

    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(9, "step", s + 10, 600)
        t.library("nn.Module: DataParallel_0", s + 20, 400)
        t.launch(s + 30, 10, "void gemv2T_kernel", s + 50, 100, device_index=0)
        t.launch(s + 60, 10, "void gemv2T_kernel", s + 80, 100, device_index=1)

    devices = [device("NVIDIA A100", 8, 0, 40 * GIB, 0), device("NVIDIA A100", 8, 0, 40 * GIB, 1)]
    run = analyze(SyntheticTrace(source, devices).steps(fill), tmp_path)
    [dp] = found(run, "TTR401")
    assert dp["line"] == line_of("out = model(x)", source) and dp["severity"] == "warning"
    assert dp["self_ms_per_step"] == pytest.approx(0.4) and dp["details"]["gpu_devices"] == 2


def test_synthetic_ddp_over_gloo_on_gpus(tmp_path: Path) -> None:
    source = script(tmp_path, "from torch.nn.parallel import DistributedDataParallel\n\n\ndef build(net):\n"
                              "    model = DistributedDataParallel(net)\n    return model\n\n\ndef step(model, x):\n"
                              "    out = model(x)\n    return out\n")

    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(9, "step", s + 10, 600)
        t.library("nn.Module: DistributedDataParallel_0", s + 20, 400)
        t.launch(s + 30, 10, "void gemv2T_kernel", s + 50, 100)
        t.op("c10d::allreduce_", s + 100, 150)

    trace = SyntheticTrace(source, [device("NVIDIA A100", 8, 0, 40 * GIB)], {"backend": "gloo", "rank": 0, "world_size": 2})
    run = analyze(trace.steps(fill), tmp_path)
    [ddp] = found(run, "TTR402")
    assert ddp["line"] == line_of("out = model(x)", source) and ddp["details"]["backend"] == "gloo"
    assert ddp["self_ms_per_step"] == pytest.approx(run.report["breakdown_ms"]["communication"], abs=1e-3)
    assert ddp["self_ms_per_step"] > 0
    assert not found(run, "TTR401")  # one GPU


def _matmul(dtype: str, dims: list[list[int]], kernel: str) -> Any:
    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(4, "step", s + 10, 900)
        t.call("mm", s + 20, 100)
        t.op("aten::mm", s + 25, 90, [dtype, dtype], dims)
        t.launch(s + 30, 10, kernel, s + 60, 600)
    return fill


MATMUL_SCRIPT = "import torch\n\n\ndef step(a, b):\n    c = torch.mm(a, b)\n    return c\n"


def test_synthetic_no_tensor_cores_on_a_v100(tmp_path: Path) -> None:
    source = script(tmp_path, MATMUL_SCRIPT)
    trace = SyntheticTrace(source, [device("Tesla V100-SXM2-16GB", 7, 0, 16 * GIB)])
    run = analyze(trace.steps(_matmul("float", [[512, 512], [512, 512]], "volta_sgemm_128x64_nn")), tmp_path)
    [amp] = found(run, "TTR606")
    assert amp["line"] == line_of("c = torch.mm(a, b)", source)
    assert amp["self_ms_per_step"] == pytest.approx(0.6) and amp["details"]["capability"] == "7.0"
    assert not found(run, "TTR602")  # no TF32 before compute capability 8.0


def test_synthetic_fp16_matmul_dims_not_multiples_of_8(tmp_path: Path) -> None:
    source = script(tmp_path, MATMUL_SCRIPT)
    trace = SyntheticTrace(source, [device("NVIDIA A100", 8, 0, 40 * GIB)])
    kernel = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"
    run = analyze(trace.steps(_matmul("c10::Half", [[4096, 1000], [1000, 30522]], kernel)), tmp_path)
    [shape] = found(run, "TTR601")
    assert shape["line"] == line_of("c = torch.mm(a, b)", source) and "N=30522" in shape["message"]
    assert shape["self_ms_per_step"] == pytest.approx(0.6)
    assert not found(run, "TTR606")  # the kernel ran on the Tensor Cores


def test_synthetic_memory_near_the_gpus_limit(tmp_path: Path) -> None:
    source = script(tmp_path, "import torch\n\n\ndef step(n):\n    buf = torch.empty(n, device='cuda')\n    return buf\n")

    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(4, "step", s + 10, 900)
        t.call("empty", s + 20, 60)
        t.op("aten::empty", s + 25, 50)
        t.memory(s + 30, int(0.95 * GIB), int(0.95 * GIB), 0x7F0000000000)
        t.launch(s + 100, 10, "void fill_kernel", s + 120, 50)
        t.memory(s + 1400, -int(0.95 * GIB), 0, 0x7F0000000000)

    run = analyze(SyntheticTrace(source, [device("NVIDIA T4", 7, 5, GIB)]).steps(fill), tmp_path)
    [near] = found(run, "TTR703")
    assert near["line"] == line_of("buf = torch.empty(n, device='cuda')", source) and near["severity"] == "warning"
    assert near["details"]["peak_bytes"] == int(0.95 * GIB) and near["details"]["total_bytes"] == GIB


def test_synthetic_a_loader_with_workers_still_over_five_percent(tmp_path: Path) -> None:
    source = script(tmp_path, "def step(loader):\n    for batch in loader:\n        return batch\n")

    def fill(t: SyntheticTrace, s: float) -> None:
        t.frame(1, "step", s + 10, 1200)
        t.library("torch/utils/data/dataloader.py(720): __next__", s + 20, 300)
        t.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", s + 25, 290)
        t.op("aten::mm", s + 400, 700)

    run = analyze(SyntheticTrace(source).steps(fill), tmp_path)
    [wait] = found(run, "TTR304")
    assert wait["line"] == line_of("for batch in loader:", source)
    assert wait["self_ms_per_step"] == pytest.approx(0.29) and not wait["details"]["in_process"]
    assert not found(run, "TTR303")
