"""Which lines run once per step: annotated sources, one per training-loop shape.

Each source marks its lines: ``# H`` = the statement starting on this line is
per-step, ``# C`` = it is not (set-up, per-epoch, under a rare guard).
Unmarked lines are not checked.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtriage.analysis.context import ModuleContext
from torchtriage.analysis.hotloops import HotLoops, find_hot_loops
from torchtriage.analysis.step_markers import is_rare_guard, tokens


def analyse(source: str) -> tuple[str, HotLoops]:
    code = textwrap.dedent(source).lstrip("\n")
    return code, find_hot_loops(ModuleContext(code, ast.parse(code)))


def per_step_lines(hot: HotLoops) -> set[int]:
    return {node.lineno for node in hot.per_step if isinstance(node, ast.stmt)}


def check_marks(source: str) -> HotLoops:
    code, hot = analyse(source)
    hot_lines = per_step_lines(hot)
    marked = 0
    for number, line in enumerate(code.splitlines(), 1):
        text = line.rstrip()
        if text.endswith("# H"):
            assert number in hot_lines, f"line {number} should be per-step: {line.strip()}"
            marked += 1
        elif text.endswith("# C"):
            assert number not in hot_lines, f"line {number} should not be per-step: {line.strip()}"
            marked += 1
    assert marked, "a case must mark lines"
    return hot


def region_at(hot: HotLoops, line: int):
    matches = [r for r in hot.regions if r.node.lineno == line]
    assert matches, f"no region starts on line {line}: {[r.node.lineno for r in hot.regions]}"
    return matches[0]


# --- step loops ------------------------------------------------------------------------


def test_plain_loader_loop_with_epoch_loop():
    hot = check_marks(
        """
        model = Net()                                    # C
        for epoch in range(10):                          # C
            model.train()                                # C
            for x, y in train_loader:                    # C
                optimizer.zero_grad()                    # H
                loss = criterion(model(x), y)            # H
                loss.backward()                          # H
                optimizer.step()                         # H
            scheduler.step()                             # C
            print(f"epoch {epoch} done")                 # C
        torch.save(model.state_dict(), "m.pt")           # C
        """
    )
    assert [loop.lineno for loop in hot.epoch_loops] == [2]
    region = region_at(hot, 4)
    assert region.kind == "step-loop" and region.trains
    assert region.batch_names >= {"x", "y", "loss"}


def test_enumerate_tqdm_and_nested_tuple_targets():
    hot = check_marks(
        """
        for i, (images, labels) in enumerate(tqdm(train_loader, desc="train")):   # C
            images = images.to(device)                   # H
            out = model(images)                          # H
        for batch in tqdm(val_loader):                   # C
            preds = model(batch["x"])                    # H
        """
    )
    first = region_at(hot, 1)
    assert first.counter_names == {"i"}
    assert first.batch_names >= {"images", "labels", "out"}
    assert region_at(hot, 4).batch_names >= {"batch", "preds"}


def test_loader_defined_under_any_name_and_dataloaders_by_phase():
    check_marks(
        """
        train_data = torch.utils.data.DataLoader(ds, batch_size=32)
        for xb, yb in train_data:                        # C
            stats.append(xb.shape)                       # H
        for inputs, labels in dataloaders[phase]:        # C
            running += inputs.size(0)                    # H
        for batch in self.train_dataloader():            # C
            seen += 1                                    # H
        """
    )


def test_nanogpt_while_true_with_micro_steps_and_rare_guards():
    hot = check_marks(
        """
        X, Y = get_batch('train')                                        # C
        while True:                                                      # C
            lr = get_lr(iter_num) if decay_lr else learning_rate         # H
            if iter_num % eval_interval == 0 and master_process:         # H
                losses = estimate_loss()                                 # C
                print(f"step {iter_num}: val {losses['val']:.4f}")       # C
            if iter_num == 0 and eval_only:                              # H
                break                                                    # C
            for micro_step in range(gradient_accumulation_steps):        # H
                with ctx:                                                # H
                    logits, loss = model(X, Y)                           # H
                X, Y = get_batch('train')                                # H
                scaler.scale(loss).backward()                            # H
            scaler.step(optimizer)                                       # H
            scaler.update()                                              # H
            optimizer.zero_grad(set_to_none=True)                        # H
            if iter_num % log_interval == 0 and master_process:          # H
                lossf = loss.item() * gradient_accumulation_steps        # C
            iter_num += 1                                                # H
            if iter_num > max_iters:                                     # H
                break                                                    # H

        def get_batch(split):
            data = train_data if split == 'train' else val_data          # H
            ix = torch.randint(len(data) - block_size, (batch_size,))    # H
            return x, y                                                  # H

        def estimate_loss():
            out = {}                                                     # C
            for split in ['train', 'val']:                               # C
                losses = torch.zeros(eval_iters)                         # C
                for k in range(eval_iters):                              # C
                    X, Y = get_batch(split)                              # H
                    logits, loss = model(X, Y)                           # H
                    losses[k] = loss.item()                              # H
                out[split] = losses.mean()                               # C
            return out                                                   # C
        """
    )
    outer, inner = region_at(hot, 2), region_at(hot, 9)
    assert outer.trains and inner.trains
    assert inner.counter_names == {"micro_step"}
    assert outer.counter_names == {"iter_num"}  # from `iter_num += 1`
    assert inner.batch_names >= {"X", "Y", "logits", "loss"}
    assert region_at(hot, 23).kind == "step-function"  # get_batch, called per step
    assert [loop.lineno for loop in hot.epoch_loops] == [30]  # `for split in ...`


def test_gradient_accumulation_boundary_is_per_step():
    """Decision: the body of `if (i + 1) % accum == 0:` that steps the optimizer runs once per
    optimizer step; it is per-step (and listed in accumulation_guards), unlike a logging guard."""
    hot = check_marks(
        """
        for i, (x, y) in enumerate(loader):                  # C
            loss = criterion(model(x), y) / accum            # H
            loss.backward()                                  # H
            if (i + 1) % accum == 0:                         # H
                torch.nn.utils.clip_grad_norm_(params, 1.0)  # H
                optimizer.step()                             # H
                optimizer.zero_grad()                        # H
                if (i + 1) % (accum * 50) == 0:              # H
                    print(loss.item())                       # C
            if i % log_every == 0:                           # H
                writer.add_scalar("loss", loss.item(), i)    # C
        """
    )
    assert [g.lineno for g in hot.accumulation_guards] == [4]
    assert sorted(g.lineno for g in hot.rare_guards) == [8, 10]


def test_iterator_with_next_inside_range_and_while_loops():
    check_marks(
        """
        it = iter(train_loader)                          # C
        for step in range(max_steps):                    # C
            try:                                         # H
                batch = next(it)                         # H
            except StopIteration:                        # C
                it = iter(train_loader)                  # H
                batch = next(it)                         # H
            out = model(batch)                           # H

        step = 0                                         # C
        while step < max_steps:                          # C
            x, y = next(data_iter)                       # H
            loss = model(x, y)                           # H
            loss.backward()                              # H
            step += 1                                    # H
        """
    )


def test_range_loop_with_get_batch_for_eval_without_backward():
    hot = check_marks(
        """
        @torch.no_grad()
        def evaluate():
            model.eval()                                 # C
            for step in range(eval_steps):               # C
                x, y = get_batch("val")                  # H
                logits, loss = model(x, y)               # H
                total += loss                            # H
            model.train()                                # C
        """
    )
    region = region_at(hot, 4)
    assert not region.trains and region.counter_names == {"step"}
    assert {"x", "y", "loss"} <= region.batch_names


def test_eval_loop_under_no_grad():
    check_marks(
        """
        model.eval()                                     # C
        with torch.no_grad():                            # C
            for data, target in test_loader:             # C
                output = model(data)                     # H
                pred = output.argmax(dim=1)              # H
                correct += pred.eq(target).sum().item()  # H
        print(correct / len(test_loader.dataset))        # C
        """
    )


# --- not step loops ----------------------------------------------------------------------


def test_range_list_work_file_processing_and_tensor_lists_are_not_hot():
    hot = check_marks(
        """
        layers = []                                      # C
        for i in range(12):                              # C
            layers.append(nn.Linear(64, 64))             # C
        for path in sorted(glob.glob("data/*.png")):     # C
            image = Image.open(path).convert("RGB")      # C
            samples.append(torch.from_numpy(np.asarray(image)))  # C
        for t in tensors:                                # C
            total = total + t.sum()                      # C
        for name, p in model.named_parameters():         # C
            print(name, p.shape)                         # C
        for k, v in state_dict.items():                  # C
            new_state[k.replace("module.", "")] = v      # C
        """
    )
    assert hot.regions == [] and hot.epoch_loops == []


def test_loops_inside_forward_are_not_step_loops():
    hot = check_marks(
        """
        class Encoder(nn.Module):
            def forward(self, x):
                for _ in range(self.depth):              # C
                    x = self.encoder(x)                  # C
                for block in self.blocks:                # C
                    x = block(x)                         # C
                return x                                 # C
        """
    )
    assert hot.regions == []


def test_loop_that_calls_the_model_on_each_item_is_an_inference_step():
    check_marks(
        """
        for img in images:                               # C
            out = model(img.unsqueeze(0))                # H
        for i in range(100):                             # C
            y = model(x)                                 # H
        """
    )


def test_nested_non_step_loops_inside_a_step_run_per_step():
    check_marks(
        """
        for x, y in loader:                              # C
            loss = model(x, y)                           # H
            loss.backward()                              # H
            for p in model.parameters():                 # H
                p.grad.mul_(0.5)                         # H
            for g in optimizer.param_groups:             # H
                g["lr"] = lr                             # H
            else:                                        # C
                done = True                              # H
        """
    )


# --- per-step functions ---------------------------------------------------------------------


def test_train_step_function_and_train_one_epoch():
    hot = check_marks(
        """
        def train_step(model, batch, optimizer):
            x, y = batch                                 # H
            loss = F.cross_entropy(model(x), y)          # H
            loss.backward()                              # H
            optimizer.step()                             # H
            return loss                                  # H

        def train_one_epoch(model, loader, optimizer):
            model.train()                                # C
            total = 0.0                                  # C
            for batch in loader:                         # C
                loss = train_step(model, batch, optimizer)  # H
                total += loss.detach()                   # H
            return total / len(loader)                   # C

        def unused_helper(batch):
            return batch * 2                             # C

        for epoch in range(epochs):                      # C
            train_one_epoch(model, train_loader, optimizer)  # C
        """
    )
    step_fn = region_at(hot, 1)
    assert step_fn.kind == "step-function" and step_fn.trains
    assert step_fn.batch_names >= {"batch", "x", "y"}
    assert step_fn.via is not None and step_fn.via.lineno == 12
    assert [loop.lineno for loop in hot.epoch_loops] == [19]


def test_methods_via_self_and_via_an_instance():
    hot = check_marks(
        """
        class Trainer:
            def __init__(self, model):
                self.model = model                       # C

            def step_fn(self, batch):
                loss = self.model(batch).mean()          # H
                loss.backward()                          # H

            def fit(self, loader):
                for epoch in range(3):                   # C
                    for batch in loader:                 # C
                        self.step_fn(batch)              # H
                    self.log_epoch(epoch)                # C

            def log_epoch(self, epoch):
                print(epoch)                             # C

        class Other:
            def step_fn(self, batch):
                return batch                             # C

        class Engine:
            def run_batch(self, x):
                return self.model(x)                     # H

        engine = Engine()
        for x in test_loader:
            engine.run_batch(x)                          # H
        """
    )
    assert region_at(hot, 5).batch_names >= {"batch", "loss"}


def test_nested_functions_and_helpers_defined_in_the_loop():
    check_marks(
        """
        def main():
            def forward_backward(x, y):
                loss = model(x).sub(y).pow(2).mean()     # H
                loss.backward()                          # H
                return loss                              # H

            for x, y in loader:                          # C
                def closure():
                    return model(x).sum()                # H
                forward_backward(x, y)                   # H
                optimizer.step(closure)                  # H
        """
    )


def test_step_function_called_only_under_a_rare_guard_is_not_hot():
    check_marks(
        """
        def save_samples(model):
            images = model.sample(16)                    # C
            save_image(images, "s.png")                  # C

        for step, batch in enumerate(loader):
            loss = model(batch)                          # H
            if step % 1000 == 0:                         # H
                save_samples(model)                      # C
        """
    )


def test_step_function_batch_params_fall_back_to_names():
    hot = check_marks(
        """
        def train_step(images, labels):
            logits = net(images)                         # H
            return criterion(logits, labels)             # H

        for step in range(n_steps):
            train_step(*fetch())                         # H
        """
    )
    assert {"images", "labels", "logits"} <= region_at(hot, 1).batch_names


def test_lightning_steps_and_batch_hooks():
    hot = check_marks(
        """
        class LitModel(pl.LightningModule):
            def __init__(self):
                self.net = Net()                         # C

            def training_step(self, batch, batch_idx):
                x, y = batch                             # H
                loss = F.cross_entropy(self(x), y)       # H
                self.log("train_loss", loss)             # H
                if batch_idx % 100 == 0:                 # H
                    self.logger.log_image(x[:4])         # C
                return loss                              # H

            def validation_step(self, batch, batch_idx):
                self.log("val_loss", self._shared(batch))  # H

            def test_step(self, batch, batch_idx):
                return self._shared(batch)               # H

            def _shared(self, batch):
                return self.net(batch[0]).mean()         # H

            def on_train_batch_end(self, outputs, batch, batch_idx):
                self.ema.update(self.net)                # H

            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters())  # C

            def on_train_epoch_end(self):
                print("epoch")                           # C
        """
    )
    step = region_at(hot, 5)
    assert step.kind == "lightning-step"
    assert step.batch_names >= {"batch", "x", "y"} and step.counter_names == {"batch_idx"}
    assert region_at(hot, 22).batch_names == {"batch"}


# --- rare guards ------------------------------------------------------------------------------


GUARDS = [
    ("step % log_every == 0", True),
    ("i % 1 == 0", False),
    ("(i + 1) % 1 == 0", False),
    ("step % log_every != 0", False),
    ("step % 10", False),
    ("not step % 10", True),
    ("i == len(loader) - 1", True),
    ("batch_idx + 1 == len(train_loader)", True),
    ("last_batch or batch_idx % log_interval == 0", True),
    ("last_batch or use_amp", False),
    ("args.rank == 0", False),
    ("rank == 0", False),
    ("is_main_process", False),
    ("master_process", False),
    ("trainer.is_global_zero", False),
    ("is_main_process and step % 100 == 0", True),
    ("args.dry_run", True),
    ("should_log(step)", True),
    ("self.is_last_batch()", True),
    ("step == 0", True),
    ("epoch == start_epoch", True),
    ("step in eval_steps", True),
    ("step > warmup_steps", False),
    ("num_gpus == 1", False),
    ("args.mode == 'train'", False),
    ("scaler is not None", False),
    ("logits is None", False),
    ("interval_loss > 0", False),
    ("args.distributed", False),
    ("accelerator.sync_gradients", False),
    ("'%d' % step == '0'", False),
]


@pytest.mark.parametrize(("test", "rare"), GUARDS, ids=[g[0] for g in GUARDS])
def test_rare_guard_table(test, rare):
    expression = ast.parse(test, mode="eval").body
    assert is_rare_guard(expression, {"step", "i", "batch_idx"}) is rare


def test_name_tokens():
    assert tokens("is_lastBatch") == {"is", "last", "batch"}
    assert tokens("optimizerD") == {"optimizer", "d"}
    assert "val" not in tokens("interval")


def test_rare_guard_else_branch_is_per_step():
    check_marks(
        """
        for step, (x, y) in enumerate(loader):
            if step % 100 == 0:                          # H
                log(x)                                   # C
            elif step % 10 == 0:                         # H
                small_log(x)                             # C
            else:
                out = model(x)                           # H
        """
    )


# --- odd inputs ----------------------------------------------------------------------------


def test_recursive_step_functions_terminate():
    hot = check_marks(
        """
        def step(batch, depth=0):
            if depth < 3:                                # H
                return step(batch, depth + 1)            # H
            return model(batch)                          # H

        for batch in loader:
            step(batch)                                  # H
        """
    )
    assert sum(r.kind == "step-function" for r in hot.regions) == 1


def test_empty_and_loopless_modules():
    assert analyse("")[1].regions == []
    assert analyse("x = 1\ndef f():\n    return model(x)\n")[1].regions == []


def test_regions_sorted_and_every_region_node_owned():
    _code, hot = analyse(
        """
        for x, y in loader_b:
            model(x)
        for x, y in loader_a:
            for chunk in x.split(2):
                model(chunk).sum().backward()
        """
    )
    lines = [r.node.lineno for r in hot.regions]
    assert lines == sorted(lines) == [1, 3, 4]
    inner = region_at(hot, 4)
    call = next(n for n in ast.walk(inner.node) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "backward")
    assert hot.region_of(call) is inner  # the innermost step loop owns its body
