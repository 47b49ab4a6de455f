"""Cases distilled from reading every finding on real training code (bench/ACCURACY.md).

The sources below are written for these tests; each imitates the *shape* of a
construct met in pytorch/examples, timm, nanoGPT, minGPT or the Lightning
examples, where torchtriage was once wrong.  Hot-loop cases assert the fix;
rule cases that are still wrong are strict xfails naming the rule owner's
problem, so they turn into failures (and get their marker removed) once fixed.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtriage.analysis import analyze_source
from torchtriage.analysis.context import ModuleContext
from torchtriage.analysis.hotloops.finder import HotLoops, find_hot_loops
from torchtriage.analysis.rules import rule_by_code
from torchtriage.config import Settings


def hot_of(source: str) -> tuple[str, HotLoops]:
    code = textwrap.dedent(source).lstrip("\n")
    return code, find_hot_loops(ModuleContext(code, ast.parse(code)))


def hot_lines(source: str) -> tuple[set[int], HotLoops]:
    _code, hot = hot_of(source)
    return {n.lineno for n in hot.per_step if isinstance(n, ast.stmt)}, hot


def findings(source: str, code: str) -> list:
    if rule_by_code(code) is None:
        pytest.skip(f"{code} not registered")
    text = textwrap.dedent(source).lstrip("\n")
    return [f for f in analyze_source(text, settings=Settings(select=(code,))) if f.code == code]


# --- hot loops: fixed ------------------------------------------------------------------------


def test_epoch_loop_calling_train_one_epoch_with_batch_size_keywords_is_not_hot():
    """timm train.py: `batch_size_reference=` once made the epoch function look like a step."""
    lines, hot = hot_lines(
        """
        def main():
            for module in args.device_modules:
                importlib.import_module(module)
            for epoch in range(start_epoch, num_epochs):
                metrics = train_one_epoch(epoch, model, loader, optimizer, batch_size_reference=bs, scheduled_batch_mode=sbm)
                lr_scheduler.step(epoch + 1)

        def train_one_epoch(epoch, model, loader, optimizer, batch_size_reference=None, scheduled_batch_mode=False):
            model.train()
            for batch_idx, (input, target) in enumerate(loader):
                def _forward():
                    return loss_fn(model(input), target)

                def _backward(_loss):
                    _loss.backward()
                    optimizer.step()

                loss = _forward()
                _backward(loss)
                losses_m.update(loss.item(), input.size(0))
            loss_avg = reduce_tensor(torch.tensor([losses_m.avg]), world_size).item()
            return loss_avg
        """
    )
    assert not lines & {3, 5, 6}, "set-up and epoch-level code is not per-step"
    assert {12, 15, 16, 18, 19, 20} <= lines
    assert 21 not in lines, "code after the step loop runs once per epoch"
    assert [loop.lineno for loop in hot.epoch_loops] == [4]
    step = next(r for r in hot.regions if r.kind == "step-loop")
    assert step.trains, "backward inside a helper called per step counts as training"


def test_builder_calls_named_like_models_are_not_model_calls():
    """`importlib.import_module(m)`, `load_model(path)`, `torch.Generator(device=...)`."""
    lines, hot = hot_lines(
        """
        for name in names:
            mod = importlib.import_module(name)
        for path in checkpoints:
            net = load_model(path)
        for p in group["params"]:
            rng = torch.Generator(device=p.device)
            p.add_(torch.randn(p.shape, generator=rng))
        """
    )
    assert hot.regions == [] and not lines


def test_print_limited_by_a_counter_is_not_per_step():
    """minGPT adder: `if not correct[i] and shown < 5: print(...); shown += 1`."""
    lines, hot = hot_lines(
        """
        shown = 0
        for x, y in loader:
            pred = model(x)
            ok = pred == y
            for i in range(len(ok)):
                if not ok[i] and shown < 5:
                    shown += 1
                    print("wrong", x[i], pred[i])
        """
    )
    assert {3, 4, 5, 6} <= lines and not lines & {7, 8}
    assert len(hot.rare_guards) == 1


def test_eval_helper_with_range_loop_and_get_batch():
    """nanoGPT estimate_loss: the inner range loop is an eval step loop, the split loop is not."""
    lines, hot = hot_lines(
        """
        @torch.no_grad()
        def estimate_loss():
            out = {}
            for split in ["train", "val"]:
                losses = torch.zeros(eval_iters)
                for k in range(eval_iters):
                    X, Y = get_batch(split)
                    logits, loss = model(X, Y)
                    losses[k] = loss.item()
                out[split] = losses.mean()
            return out
        """
    )
    assert {7, 8, 9} <= lines and not lines & {3, 4, 5, 10, 11}
    assert [loop.lineno for loop in hot.epoch_loops] == [4]


def test_reinforcement_learning_episode_and_env_steps():
    """pytorch/examples reinforce: one optimizer step per episode; each env step runs the policy."""
    lines, hot = hot_lines(
        """
        def select_action(state):
            probs = policy(torch.from_numpy(state).float().unsqueeze(0))
            return Categorical(probs).sample()

        def finish_episode():
            loss = torch.cat(policy_losses).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        for i_episode in count(1):
            state = env.reset()
            for t in range(1, 10000):
                action = select_action(state)
                state, reward, done = env.step(action)
                if done:
                    break
            finish_episode()
            if i_episode % log_interval == 0:
                print(i_episode)
        """
    )
    assert {2, 3, 6, 7, 8, 9, 12, 13, 14, 15, 18} <= lines
    assert 20 not in lines
    kinds = sorted(r.kind for r in hot.regions)
    assert kinds == ["step-function", "step-function", "step-loop"]  # the env loop is nested in the step
    episode = next(r for r in hot.regions if r.kind == "step-loop")
    assert episode.trains and episode.counter_names == {"i_episode"} and not episode.batch_names


def test_lbfgs_closure_runs_every_step():
    """time_sequence_prediction: `optimizer.step(closure)` calls the closure per step."""
    lines, _hot = hot_lines(
        """
        for i in range(steps):
            def closure():
                optimizer.zero_grad()
                out = seq(input)
                loss = criterion(out, target)
                print("loss:", loss.item())
                loss.backward()
                return loss
            optimizer.step(closure)
        """
    )
    assert {3, 4, 5, 6, 7, 8, 9} <= lines


# --- rule cases found on real code, reported to the rule owners --------------------------------


def test_tt301_dtype_cast_through_an_attribute_is_not_a_copy():
    assert not findings(
        """
        import torch
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            x = x.to(self.img_dtype).sub_(mean).div_(std)
            loss = model(x).sum(); loss.backward()
        """,
        "TT301",
    )


def test_tt301_model_output_is_not_batch_data():
    assert not findings(
        """
        import torch
        device = torch.device("cuda:0")
        with torch.no_grad():
            for data, target in test_loader:
                out = model(data)
                pred = out.argmax(dim=1, keepdim=True)
                pred = pred.to(device)
        """,
        "TT301",
    )


def test_tt301_leaves_fresh_tensors_to_tt305():
    assert not findings(
        """
        import torch
        for batch in loader:
            reward = env_step(model(batch))
            log = {"reward": torch.tensor(reward).to("cuda")}
        """,
        "TT301",
    )


def test_tt302_one_shot_loader_is_not_a_training_loader():
    assert not findings(
        """
        import torch
        from torch.utils.data import DataLoader

        def on_train_epoch_end(self, trainer, pl_module):
            images, _ = next(iter(DataLoader(trainer.datamodule.mnist_val, batch_size=8)))
            self.log_images(pl_module(images))
        """,
        "TT302",
    )


# --- detr / mae / accelerate / pytorch-cifar (read 2026-11-22) ---------------------------


def test_total_training_time_around_save_model_is_not_a_cuda_timing() -> None:
    """mae ``main_*.py``: the whole-run timer around an epoch loop that calls ``misc.save_model``;
    ``save_model`` is an operation on a model, not a forward pass, so nothing GPU-timed is in there."""
    source = """
        import time, datetime, torch
        device = torch.device("cuda")
        start_time = time.time()
        for epoch in range(epochs):
            train_stats = train_one_epoch(model, loader, optimizer, device, epoch)
            misc.save_model(args=args, model=model, optimizer=optimizer, epoch=epoch)
        total_time = time.time() - start_time
        print(str(datetime.timedelta(seconds=int(total_time))))
    """
    assert findings(source, "TT402") == []
    forward = source.replace("misc.save_model(args=args, model=model, optimizer=optimizer, epoch=epoch)", "out = ddp_model(x)")
    assert [f.span.line for f in findings(forward, "TT402")] == [7]  # a real forward pass still counts


def test_asserts_in_test_modules_are_not_step_hazards() -> None:
    """accelerate ``tests/test_data_loader.py``: asserts on batches inside a loop over a DataLoader."""
    source = textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader

        def test_batches_match(dataset):
            for batch in DataLoader(dataset, batch_size=4):
                out = model(batch.cuda())
                assert torch.allclose(out, expected)
    """).lstrip("\n")
    assert [f.code for f in analyze_source(source, "tests/test_data_loader.py") if f.code == "TT103"] == []
    assert [f.code for f in analyze_source(source, "train.py") if f.code == "TT103"] == ["TT103"]


# --- TT306 on timm / pytorch-examples / yolov5 / UNet data code (read 2026-11-23) --------


def test_tt306_collate_filling_a_batch_tensor_sample_by_sample_is_not_per_element() -> None:
    """timm ``fast_collate``: ``tensor[i + j * batch_size] += ...`` mentions ``batch_size`` in a
    subscript target; that is a read, so ``range(batch_size)`` stays ``len(batch)``: per sample."""
    source = """
        import numpy as np
        import torch

        def fast_collate(batch):
            batch_size = len(batch)
            targets = torch.tensor([b[1] for b in batch], dtype=torch.int64)
            tensor = torch.zeros((batch_size, *batch[0][0].shape), dtype=torch.uint8)
            for i in range(batch_size):
                for j in range(2):
                    tensor[i + j * batch_size] += torch.from_numpy(batch[i][0][j])
            for i in range(batch_size):
                tensor[i].copy_(batch[i][0])
            return tensor, targets
    """
    assert findings(source, "TT306") == []
    per_label = source.replace("for i in range(batch_size):\n                tensor[i]", "for i in range(len(targets)):\n                tensor[i]")
    assert [f.span.line for f in findings(per_label, "TT306")] == [11]  # the labels tensor's length is a size


def test_tt306_shuffled_schedule_of_indices_is_not_per_element() -> None:
    """timm ``NaFlexMapDatasetWrapper.__iter__`` helper: ``perm = torch.randperm(n).tolist()`` then
    ``[schedule[i] for i in perm]`` walks indices of a Python list, not a tensor's elements."""
    source = """
        import torch
        from torch.utils.data import IterableDataset

        class Batches(IterableDataset):
            def __iter__(self):
                for batch in self._epoch_batches():
                    yield batch

            def _epoch_batches(self):
                perm = torch.randperm(self.num_batches).tolist()
                return [self.schedule[i] for i in perm]
    """
    assert findings(source, "TT306") == []
