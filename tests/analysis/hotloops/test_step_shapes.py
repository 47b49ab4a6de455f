"""Per-step shapes of issue 12 found on held-out training code, single file: invented look-alikes,
each with a negative look-alike that must stay quiet."""

from __future__ import annotations

import textwrap

from torchtriage.analysis import analyze_source
from torchtriage.config import Settings


def lines(source: str, code: str) -> set[int]:
    text = textwrap.dedent(source).lstrip("\n")
    return {f.span.line for f in analyze_source(text, "train.py", Settings(select=(code,)))}


def test_tensors_passed_through_a_local_lambda_or_helper_are_read_every_step():
    source = """
        import torch
        to_np = lambda t: t.detach().cpu().numpy()
        as_float = lambda t: t.item()
        def host(v):
            return v.cpu().numpy()
        net = torch.nn.Linear(4, 4).cuda()
        for x, y in loader:
            out = net(x.cuda(non_blocking=True))
            loss = (out - y.cuda(non_blocking=True)).pow(2).mean()
            loss.backward(); opt.step()
            scores = to_np(out)
            h = host(out)
            a, b = map(lambda t: t.item(), (loss, out.sum()))
        final = as_float(loss)  # once, after the loop
    """
    assert lines(source, "TT101") == {2, 5, 13}  # not line 3: as_float only runs after the loop


def test_a_lambda_handed_host_numbers_only_is_not_a_sync():
    source = """
        import torch
        to_np = lambda t: t.detach().cpu().numpy()
        net = torch.nn.Linear(4, 4).cuda()
        for x, y in loader:
            out = net(x.cuda(non_blocking=True))
            out.sum().backward(); opt.step()
            lrs = list(map(lambda g: g["lr"], opt.param_groups))
        print(to_np(out))
    """
    assert lines(source, "TT101") == set()


def test_a_guard_whose_body_asserts_its_negation_ends_the_run():
    source = """
        import math
        for x, y in loader:
            loss = model(x).sum()
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                print("Loss is {}, stopping training".format(loss_value))
                assert math.isfinite(loss_value)
            other = loss.item()
            if not math.isfinite(other):
                assert other > 0  # not the negation of the test: the run may go on
            if drop_patches:
                assert False, "not implemented"
                kept = loss.tolist()
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT101") == {8}
    assert lines(source, "TT102") == set()


def test_a_modulo_guard_written_through_a_helper_is_rare():
    source = """
        import torch
        def divisible_by(numer, denom):
            return (numer % denom) == 0
        def is_positive(n, d):
            return n > d
        model = Net().cuda()
        step = 0
        while step < total:
            loss = model(next(dl).cuda(non_blocking=True)).mean()
            loss.backward(); opt.step()
            step += 1
            if divisible_by(step, save_every):
                model.save(step)
                kept = loss.cpu()
            if is_positive(step, 10):
                seen = loss.cpu()
    """
    assert lines(source, "TT101") == {16}


def test_loop_targets_read_from_a_tolist_are_python_numbers_but_tensor_rows_are_not():
    source = """
        import torch
        times = torch.linspace(-1, 999, steps=51)
        times = list(reversed(times.int().tolist()))
        time_pairs = list(zip(times[:-1], times[1:]))
        for time, time_next in tqdm(time_pairs):
            pred = model(img, time)
            if time_next < 0:
                img = pred
                continue
        sigmas = torch.linspace(1.0, 0.0, 10, device="cuda")
        for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
            img = model(img, sigma)
            if sigma_next > 0:
                img = img * sigma_next
    """
    assert lines(source, "TT103") == {13}


def test_an_optional_tensor_set_in_one_branch_is_a_tensor_when_tested():
    source = """
        for samples, targets in loader:
            output = model(samples)
            loss = criterion(output, targets)
            loss.backward(); opt.step()
            if mixup_fn is None:
                class_acc = (output.max(-1)[-1] == targets).float().mean()
            else:
                class_acc = None
            if class_acc:
                print("acc")
            flag = None
            if flag:
                print("flag")
    """
    assert lines(source, "TT103") == {9}


def test_a_chunk_loop_over_tensors_is_per_batch_but_a_chunk_loop_over_a_list_is_not():
    source = """
        import torch
        @torch.no_grad()
        def knn(train_feats, test_feats, test_labels, chunk=100):
            top1 = 0.0
            for idx in range(0, test_feats.shape[0], chunk):
                feats = test_feats[idx : idx + chunk]
                sim = torch.mm(feats, train_feats.t())
                correct = sim.argmax(1).eq(test_labels[idx : idx + chunk])
                top1 = top1 + correct.sum().item()
            return top1
        def batches(names, size):
            out = []
            for i in range(0, len(names), size):
                out.append(names[i : i + size])
                print(len(out[-1]))
            return out
    """
    assert lines(source, "TT101") == {9}


def test_attribute_clocks_bracketing_cuda_work_need_a_sync():
    source = """
        import time
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model.cuda()
                self.last = time.time()
            def fit(self, loader):
                for x in loader:
                    self.t_prev = time.time()
                    loss = self.model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
                    elapsed = time.time() - self.t_prev
            def fit_rolling(self, loader):
                for x in loader:
                    loss = self.model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
                    now = time.time()
                    self.step_time = now - self.last
                    self.last = now
            def fit_synced(self, loader):
                for x in loader:
                    loss = self.model(x.cuda(non_blocking=True)).sum()
                    loss.backward()
                    torch.cuda.synchronize()
                    now = time.time()
                    self.step_time = now - self.last
                    self.last = now
            def data_wait(self, loader):
                for x in loader:
                    self.t_data = time.time()
                    x = x.cuda(non_blocking=True)
                    waited = time.time() - self.t_data
            def on_end(self):
                return time.time() - self.t_prev
    """
    assert lines(source, "TT402") == {12, 17}
    text = textwrap.dedent(source).lstrip("\n")
    (rolling,) = [f for f in analyze_source(text, "train.py", Settings(select=("TT402",))) if f.span.line == 17]
    assert "since line 19 (in the previous iteration)" in rolling.message


def test_loaders_consumed_through_generators_and_wrappers():
    source = """
        import torch
        from torch.utils.data import DataLoader
        def infinite(loader):
            while True:
                yield from loader
        def once(loader):
            for b in loader:
                yield b
        model = torch.nn.Linear(4, 4).cuda()
        loader = DataLoader(ds, batch_size=8, num_workers=4)
        for batch in infinite(loader):
            loss = model(batch.cuda()).sum()
            loss.backward(); opt.step()
        loader2 = DataLoader(ds, batch_size=8, num_workers=4)
        it = infinite(loader2)
        for step in range(1000):
            batch = next(it)
            loss = model(batch.cuda()).sum()
            loss.backward(); opt.step()
        loader3 = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
        for batch in once(loader3):
            loss = model(batch.cuda(non_blocking=True)).sum()
            loss.backward(); opt.step()
        loader4 = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
        prefetcher = Prefetcher(loader4)
        for epoch in range(10):
            for i, batch in enumerate(prefetcher):
                loss = model(batch).sum()
                loss.backward(); opt.step()
        n = len(loader4)
    """
    assert lines(source, "TT303") == {10, 14}
    assert lines(source, "TT304") == {10, 14, 24}  # not loader3: `once` iterates it a single time
    text = textwrap.dedent(source).lstrip("\n")
    notes = {f.span.line: f.message for f in analyze_source(text, "train.py", Settings(select=("TT304",)))}
    assert "the generator `infinite` iterates it again on every pass" in notes[10]


def test_a_loader_built_and_re_iterated_inside_a_generator_restarts_its_workers():
    source = """
        from torch.utils.data import DataLoader
        def load_data(ds, batch_size):
            loader = DataLoader(ds, batch_size=batch_size, num_workers=2)
            while True:
                yield from loader
        def load_once(ds, batch_size):
            loader = DataLoader(ds, batch_size=batch_size, num_workers=2)
            yield from loader
    """
    assert lines(source, "TT304") == {3}
