"""Hot loops: which loops are step loops, and which are not.

Sources mark their lines: ``# H`` per-step, ``# C`` not (see hotloops_support).
"""

from __future__ import annotations

from hotloops_support import check_marks, region_at


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


def test_a_loop_that_always_breaks_on_its_first_batch_runs_once() -> None:
    # "take one batch": the eval loop's body ends with an unconditional break (a speech repository's
    # evaluate(), issue 25); a conditional break keeps the loop a step loop.
    check_marks(
        """
        def evaluate(model, eval_loader):
            with torch.no_grad():
                for x, y in eval_loader:
                    x, y = x.cuda(0), y.cuda(0)  # C
                    x = x[:1]  # C
                    break
                y_hat = model.infer(x)  # C
            return y_hat

        for x, y in train_loader:
            x = x.cuda()  # H
            loss = model(x, y)  # H
            loss.backward()  # H
            if bad(loss):
                break

        def probe(model, probe_loader):
            for x, y in probe_loader:
                out = model(x.cuda())  # C
                return out
        """
    )


def test_a_prediction_api_no_code_of_the_file_calls_is_not_training() -> None:
    """``predict()`` of a library model, or an ``--do_predict`` pass another file runs: inference over data."""
    check_marks(
        """
        class Model:
            def fit(self, loader, epochs):
                for epoch in range(epochs):
                    for x, y in loader:
                        loss = self.network(x.cuda(non_blocking=True), y)  # H
                        loss.backward()  # H

            def predict(self, loader):
                results = []
                for x in loader:
                    out = self.network(x.cuda())  # C
                    results.append(out.cpu().numpy())  # C
                return results
        """
    )


def test_a_prediction_the_training_runs_every_epoch_is_per_step() -> None:
    """``evaluate()`` calls ``self.predict(...)`` after each epoch of ``fit``: its batches are evaluation steps."""
    check_marks(
        """
        class Model:
            def fit(self, loader, val, epochs):
                for epoch in range(epochs):
                    for x, y in loader:
                        loss = self.network(x.cuda(non_blocking=True), y)  # H
                        loss.backward()  # H
                    self.evaluate(val)

            def evaluate(self, val):
                return score(self.predict(val))

            def predict(self, loader):
                results = []
                for x in loader:
                    out = self.network(x.cuda())  # H
                    results.append(out.cpu().numpy())  # H
                return results
        """
    )


def test_a_loop_over_splits_whose_batches_a_comprehension_walks_is_not_the_step_loop():
    """``for part in parts:`` around ``torch.cat([model(X[part][idx]) for idx in IndexLoader(...)])``: the
    comprehension walks the batches; what follows it runs once per split (``.cpu()`` of all predictions)."""
    hot = check_marks(
        """
        for part in parts:                                                            # C
            preds[part] = torch.cat([model(X[part][i]) for i in IndexLoader(n, bs)])  # C
            preds[part] = preds[part].cpu().numpy()                                  # C
        for part in parts:                                                            # C
            out = model(X[part])                                                      # H
        """
    )
    assert region_at(hot, 4).kind == "step-loop"


def test_zip_of_a_progress_bar_and_a_loader():
    hot = check_marks(
        """
        def evaluate(model, eval_loader):
            with trange(len(eval_loader)) as bar:                     # C
                for i, (data, target) in zip(bar, eval_loader):      # C
                    out = model(data)                                 # H
                    total += criterion(out, target)                   # H
            return total                                              # C
        """
    )
    region = region_at(hot, 3)
    assert region.kind == "step-loop"
    assert {"data", "target"} <= region.batch_names and "i" not in region.batch_names
    assert "i" in region.counter_names


def test_zip_of_names_and_a_list_of_loaders_is_no_batch_loop():
    hot = check_marks(
        """
        for eval_name, valid_dataloader in zip(eval_names, valid_dataloaders):   # C
            report(eval_name, valid_dataloader)                                  # C
        for name, loader in zip(cfg.DATASETS.TEST, data_loaders_val):            # C
            report(name, loader)                                                 # C
        """
    )
    assert not hot.step_loops


def test_a_loader_like_name_built_as_a_list_of_settings_is_no_batch_loop():
    hot = check_marks(
        """
        def tune(space, train, validation):
            search_space_iterator = list(ParameterGrid(space))                # C
            search_space_iterator = sorted(search_space_iterator, key=str)    # C
            for i, params in enumerate(search_space_iterator):                # C
                model = TabularModel(params)                                  # C
                model.fit(train, validation)                                  # C
                if model.score(validation) > best:                            # C
                    best = model                                              # C
            return best                                                       # C

        def replay(train_loader):
            batch_iterator = list(train_loader)                               # C
            for x, y in batch_iterator:                                       # C
                out = model(x)                                                # H
        """
    )
    assert [region.node.lineno for region in hot.step_loops] == [13]
