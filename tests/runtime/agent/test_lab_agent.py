"""The lab agent's pieces in this process, on real torch: which module is the model, where autocast applies,
the loss and the injected GradScaler at backward, compile counts and failure kinds."""

from __future__ import annotations

from typing import Iterator

import pytest
import torch
from torch import nn

from torchtriage.runtime.agent.lab.backward import BackwardTap
from torchtriage.runtime.agent.lab.compile_stats import CompileWatch, dynamo_counts
from torchtriage.runtime.agent.lab.trained_models import TrainedModels, UnsupportedPrecision
from torchtriage.runtime.agent.lab.session import failure_kind


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.inside: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inside.append(torch.is_autocast_enabled("cpu"))
        return self.body(x)


@pytest.fixture
def bf16_models() -> Iterator[TrainedModels]:
    models = TrainedModels("bf16", None)
    models.install()
    try:
        yield models
    finally:
        models.uninstall()


def test_autocast_wraps_the_trained_models_forward_and_nothing_else(bf16_models: TrainedModels) -> None:
    model, frozen = Net(), nn.Linear(4, 4)
    torch.optim.SGD(model.parameters(), lr=0.1)  # only the model's parameters train
    x = torch.randn(5, 8)
    out = model(x)
    assert model.inside == [True]
    assert out.dtype == torch.float32  # handed back in fp32 (float32_outputs): the loss meets an fp32 output
    assert not torch.is_autocast_enabled("cpu")  # left again after the forward
    assert frozen(out).dtype == torch.float32  # a module no optimizer owns runs as written
    assert (out @ torch.randn(4, 4)).dtype == torch.float32  # the loss side too
    assert bf16_models.names == ["Net"] and bf16_models.device == "cpu"
    assert bf16_models.calls == 1  # the submodules inside the model are not counted again
    assert bf16_models.output_dtype == "bfloat16" and bf16_models.take_step() == 5 and bf16_models.take_step() is None


def test_samples_per_step_add_up_over_micro_batches_of_the_first_model(bf16_models: TrainedModels) -> None:
    model, critic = Net(), nn.Linear(4, 1)
    torch.optim.SGD([*model.parameters(), *critic.parameters()], lr=0.1)
    for _ in range(3):  # gradient accumulation: three micro-batches of 4 in one step
        critic(model(torch.randn(4, 8)).float())
        critic(torch.randn(6, 4))  # another trained model: its calls do not count samples
    assert bf16_models.names == ["Net", "Linear"] and bf16_models.calls == 9
    assert bf16_models.take_step() == 12


def test_a_model_whose_optimizer_comes_after_its_first_call_is_found_later(bf16_models: TrainedModels) -> None:
    model = Net()
    model(torch.randn(3, 8))  # a dry run before the optimizer exists
    assert model.inside == [False] and bf16_models.output_dtype is None
    torch.optim.AdamW(model.parameters())
    model(torch.randn(3, 8))
    assert model.inside == [False, True] and bf16_models.output_dtype == "bfloat16"


def test_a_submodule_called_on_its_own_is_the_model_then(bf16_models: TrainedModels) -> None:
    model = Net()
    torch.optim.SGD(model.parameters(), lr=0.1)
    model.body(torch.randn(2, 8))
    assert bf16_models.output_dtype == "bfloat16" and bf16_models.names == ["Sequential"]


def test_fp32_leaves_the_model_alone_but_still_reads_its_batch_and_output() -> None:
    models = TrainedModels("fp32", None)
    models.install()
    try:
        model = Net()
        torch.optim.SGD(model.parameters(), lr=0.1)
        assert model(torch.randn(7, 8)).dtype == torch.float32 and model.inside == [False]
        assert models.output_dtype == "float32" and models.take_step() == 7
    finally:
        models.uninstall()


def test_a_device_without_autocast_is_an_unsupported_precision() -> None:
    models = TrainedModels("bf16", None)
    model = Net().to("meta")
    with pytest.raises(UnsupportedPrecision, match="autocast is not available on device type 'meta'"):
        models._first_call(model)
    assert failure_kind(UnsupportedPrecision("x")) == "unsupported_dtype"


def test_backward_keeps_the_last_scalar_loss() -> None:
    original = torch.autograd.backward
    tap = BackwardTap(scale_losses=False)
    tap.install()
    try:
        weight = torch.ones(3, requires_grad=True)
        (weight * 2).sum().backward()
        loss = (weight * 3).sum()
        loss.backward()
        torch.autograd.backward((weight * 4).sum(dim=0, keepdim=True))  # the function form too
    finally:
        tap.uninstall()
    assert tap.last is not None and tap.last.item() == 12.0 and not tap.last.requires_grad
    assert torch.autograd.backward is original and tap.scaler is None


def test_fp16_scaling_unscales_before_the_step_and_skips_a_step_with_inf_gradients() -> None:
    tap = BackwardTap(scale_losses=True)
    tap.install()
    try:
        weight = nn.Parameter(torch.tensor([1.0, 2.0]))
        optimizer = torch.optim.SGD([weight], lr=0.5)
        (weight * torch.tensor([3.0, 4.0])).sum().backward()
        assert weight.grad is not None and weight.grad.tolist() == [3.0 * 65536, 4.0 * 65536]  # scaled at backward
        optimizer.step()
        assert weight.detach().tolist() == [1.0 - 1.5, 2.0 - 2.0]  # stepped with the unscaled gradient
        optimizer.zero_grad()
        (weight * torch.tensor([float("inf"), 1.0])).sum().backward()
        before = weight.detach().clone()
        optimizer.step()
        assert torch.equal(weight.detach(), before) and tap.skipped_steps == 1  # skipped, as scaler.step would
        (weight * 1.0).sum().backward()  # the next backward first updates the scale (halved after the overflow)
        assert tap.scaler.get_scale() == 32768.0
    finally:
        tap.uninstall()


def test_fp16_leaves_a_script_with_its_own_grad_scaler_alone() -> None:
    tap = BackwardTap(scale_losses=True)
    tap.install()
    try:
        torch.amp.GradScaler("cpu")
        weight = nn.Parameter(torch.tensor([1.0]))
        (weight * 3).sum().backward()
    finally:
        tap.uninstall()
    assert tap.script_scaler and tap.scaler is None and weight.grad is not None and weight.grad.item() == 3.0


def test_compile_watch_times_compiles_and_counts_recompiles_and_graph_breaks() -> None:
    torch._dynamo.reset()
    watch = CompileWatch()
    watch.install()

    def step(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    compiled = torch.compile(step, backend="eager", dynamic=False)
    try:
        before = dynamo_counts()
        compiled(torch.randn(4))
        compiled(torch.randn(4))
        compiled(torch.randn(6))  # a new shape: the frame compiles again
    finally:
        watch.uninstall()
    after = dynamo_counts()
    assert watch.seconds() > 0 and len(watch.intervals) >= 2
    assert watch.recompiles() >= 1
    assert after["graph_breaks"] > before["graph_breaks"] and after["graphs"] > before["graphs"]
    assert watch.within(0.0, 1e12) == pytest.approx(watch.seconds())
    torch._dynamo.reset()


def test_failure_kinds_follow_the_exception_and_its_cause() -> None:
    from torch._inductor.exc import InductorError

    assert failure_kind(InductorError(RuntimeError("no compiler"), "x")) == "compile_failed"
    assert failure_kind(torch.OutOfMemoryError("CUDA out of memory")) == "out_of_memory"
    assert failure_kind(RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'')) == "unsupported_dtype"
    assert failure_kind(ValueError("bad batch")) == "raised"
    try:
        try:
            raise MemoryError()
        except MemoryError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert failure_kind(outer) == "out_of_memory"


def test_the_models_low_precision_outputs_reach_the_loss_in_fp32_and_backward_runs(bf16_models: TrainedModels) -> None:
    """On an H100, ``mse_loss(bf16 output, fp32 target).backward()`` failed the lab's bf16 row of
    examples/big_matmul.py ("Found dtype Float but expected BFloat16"): the loss now meets fp32."""
    from collections import namedtuple

    Pair = namedtuple("Pair", "logits hidden")

    class Outputs(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(8, 4)

        def forward(self, x: torch.Tensor):
            y = self.body(x)
            return {"logits": y, "extra": [y, (y, 3)], "pair": Pair(y, y.long())}

    model = Outputs()
    torch.optim.SGD(model.parameters(), lr=0.1)
    out = model(torch.randn(5, 8))
    assert out["logits"].dtype == out["extra"][0].dtype == out["extra"][1][0].dtype == torch.float32
    assert out["extra"][1][1] == 3 and isinstance(out["pair"], Pair) and out["pair"].hidden.dtype == torch.int64
    assert bf16_models.output_dtype == "bfloat16"  # what autocast produced, before the cast
    nn.functional.mse_loss(out["logits"], torch.randn(5, 4)).backward()
    assert model.body.weight.grad is not None and model.body.weight.grad.dtype == torch.float32
