"""Hot loops: functions and methods called once per step, and Lightning hooks.

Sources mark their lines: ``# H`` per-step, ``# C`` not (see hotloops_support).
"""

from __future__ import annotations

from hotloops_support import check_marks, region_at


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


def test_a_whole_training_run_called_in_a_search_loop_is_hot_only_in_its_batch_loop() -> None:
    # A hyper-parameter search calls train() once per candidate; train() asks for a batch *size* before
    # its own loader loop. A call about a batch's size is not a batch fetch, so train() is no step function
    # and the search loop no step loop: train()'s set-up and teardown run once per candidate.
    # (Invented look-alike of a detection repository's evolve loop, bench/ACCURACY.md, issue 25.)
    check_marks(
        """
        import torch

        def check_train_batch_size(model, imgsz):
            return 16

        def train(hyp, device):
            model = build(hyp).to(device)  # C
            bs = check_train_batch_size(model, 640)  # C
            weights = torch.ones(80).to(device)  # C
            opt = torch.optim.SGD(model.parameters(), lr=hyp["lr"])
            for images, targets in loader:
                images = images.to(device)  # H
                loss = model(images, targets)  # H
                loss.backward()  # H
                opt.step()  # H
            torch.cuda.empty_cache()  # C
            return evaluate(model)  # C

        for candidate in population:
            results = train(candidate, "cuda")  # C
            scores.append(results)  # C
        """
    )
    # a fetch whose name ends with the batch itself still is one
    check_marks(
        """
        def run(model, opt, data):
            for it in range(1000):
                xb, yb = data.get_train_batch()  # H
                loss = model(xb, yb)  # H
                loss.backward()  # H
                opt.step()  # H
        """
    )
