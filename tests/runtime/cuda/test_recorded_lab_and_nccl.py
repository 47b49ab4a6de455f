"""The lab and a one-rank NCCL job as they ran on an H100 (tests/data/runtime/cuda/labs, ddp_nccl): what the
GPU showed, read back by this checkout's code.  No GPU needed."""

from __future__ import annotations

import gzip
import json

from cuda_cases import CASES, cases
from torchtriage.runtime.attribution.lines import build_profile
from torchtriage.runtime.diagnosis.bottleneck import category_shares
from torchtriage.runtime.lab.reading import build_reading


def lab(name: str) -> dict:
    return json.loads((CASES / "labs" / name / "lab.json").read_text(encoding="utf-8"))


def rows(document: dict) -> dict[str, dict]:
    return {row["name"]: row for row in document["rows"]}


def test_every_lab_row_ran_on_the_gpu_and_autocast_really_lowered_the_model() -> None:
    for name in ("big_matmul", "tiny_ops"):
        document = lab(name)
        assert document["device"] == "cuda" and document["device_name"].startswith("NVIDIA"), name
        by_name = rows(document)
        assert set(by_name) == {"fp32", "bf16", "bf16+compile"}
        assert all(row["status"] == "measured" and row["memory_measure"] == "cuda_max_allocated" for row in by_name.values())
        assert [by_name[n]["output_dtype"] for n in ("fp32", "bf16", "bf16+compile")] == ["float32", "bfloat16", "bfloat16"]
        assert by_name["bf16+compile"]["compiled_forward_calls"] > 0 and by_name["bf16+compile"]["graph_breaks"] == 0
        assert all(row["loss_check"] in ("baseline", "ok") for row in by_name.values())


def test_bf16_speeds_up_the_big_fp32_matmuls_and_the_loss_after_the_model_runs() -> None:
    """The bf16 row failed on the H100 in mse_loss's backward until the model's output reached the loss in fp32."""
    by_name = rows(lab("big_matmul"))
    fp32, bf16 = by_name["fp32"]["step_time_ms"]["median"], by_name["bf16"]["step_time_ms"]["median"]
    assert bf16 < fp32 / 3  # Tensor-Core bf16 GEMMs against fp32 SIMT ones
    reading = build_reading(lab("big_matmul")["rows"], "cuda")
    assert reading["precision"]["size"] == "large" and reading["fastest"] == "bf16"


def test_a_step_of_tiny_ops_gets_slower_in_bf16_and_faster_compiled_and_the_reading_says_why_on_a_gpu() -> None:
    document = lab("tiny_ops")
    reading = build_reading(document["rows"], "cuda")
    first = reading["lines"][0]
    assert first["key"] == "precision_slower" and "cast kernel" in first["text"] and "CPU without AMX" not in first["text"]
    assert reading["verdict"] == "take_compile" and reading["fastest"] == "bf16+compile"
    assert "CPU without AMX" in build_reading(document["rows"], "cpu")["lines"][0]["text"]  # a CPU's wording stays


def test_a_one_rank_nccl_job_ran_and_its_reducer_and_communication_were_seen() -> None:
    case = cases()["ddp_nccl"]
    assert case["backend"] == "nccl" and case["world_size"] == 1 and case["device_name"].startswith("NVIDIA")
    report = json.loads((CASES / "ddp_nccl" / "report.json").read_text(encoding="utf-8"))
    assert report["device"] == "cuda" and report["status"]["status"] in ("completed", "stopped_after_window")
    [ddp] = report["ranks"]["ddp"]
    assert ddp["backend"] == "nccl" and ddp["allreduces_per_step"] == 1.0 and ddp["buckets"] == 1
    with gzip.open(CASES / "ddp_nccl" / "agent.json.gz", "rt", encoding="utf-8") as handle:
        profile = build_profile(json.load(handle))
    share = category_shares(profile)["communication"]
    assert share > 0 and abs(share - report["breakdown"]["communication"]) < 1e-4


def test_fp16_with_a_grad_scaler_and_cuda_graphs_ran_on_the_h200() -> None:
    """The lab's fp16 (autocast + GradScaler) and bf16+reduce-overhead (CUDA graphs) rows, measured on an H200."""
    for name in ("sync_every_step", "graph_leak", "device_moves"):
        document = lab(name)
        assert document["device"] == "cuda" and document["device_name"] == "NVIDIA H200", name
        by_name = rows(document)
        fp16, graphs = by_name["fp16"], by_name["bf16+reduce-overhead"]
        assert fp16["status"] == "measured" and fp16["grad_scaler"] and fp16["output_dtype"] == "float16"
        assert graphs["status"] == "measured" and graphs["compile_mode"] == "reduce-overhead" and graphs["graphs"] == 1
        assert graphs["compiled_forward_calls"] == graphs["steps_measured"] and graphs["graph_breaks"] == 0
    # a model whose outputs are kept across steps (graph_leak's logits) gains nothing from CUDA graphs: slower
    assert rows(lab("graph_leak"))["bf16+reduce-overhead"]["change_vs_fp32"] == "slower"
    reading = build_reading(lab("sync_every_step")["rows"], "cuda")
    assert reading["precision"]["size"] == "large" and reading["fastest"] == "bf16+reduce-overhead"


def test_an_eval_script_in_the_lab_fails_every_row_and_the_reading_compares_none() -> None:
    """eval_no_grad has no optimizer: no configuration applied (no_model), so no row's time is a comparison."""
    document = lab("eval_no_grad")
    assert {row["status"] for row in document["rows"]} == {"failed"} and {row["reason"] for row in document["rows"]} == {"no_model"}
    reading = build_reading(document["rows"], "cuda")
    assert reading["precision"] is None and reading["compile"] is None and reading["fastest"] is None
    assert reading["verdict"] not in ("take_compile", "take_low_precision", "take_both")
    assert all("faster" not in line["text"] for line in reading["lines"]), reading["lines"]
