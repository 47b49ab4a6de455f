"""Smaller single-file shapes from issue 12 (invented look-alikes of real training code)."""

from __future__ import annotations

import textwrap

from torchtriage.analysis import analyze_source
from torchtriage.config import Settings


def lines(source: str, code: str) -> set[int]:
    text = textwrap.dedent(source).lstrip("\n")
    return {f.span.line for f in analyze_source(text, "train.py", Settings(select=(code,)))}


def test_batch_tensors_moved_inside_comprehensions_are_blocking_copies():
    source = """
        import torch
        device = torch.device("cuda")
        for images, targets in loader:
            images = [img.to(device) for img in images]
            targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
            weights = [p.to(device) for p in model.parameters()]
            loss = model(images, targets)
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT301") == {4, 5}  # not line 6: parameters are not batch data


def test_a_read_that_guards_the_run_is_not_a_hazard_but_a_plain_read_is():
    source = """
        import math
        import sys
        import torch
        for x, y in loader:
            loss = model(x).sum()
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                print("Loss is {}, stopping training".format(loss_value))
                sys.exit(1)
            if torch.isnan(loss).item():
                raise RuntimeError("nan")
            other = loss.item()
            if not math.isfinite(other):
                print("skipping")
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT101") == {12}


def test_lazy_one_time_initialisation_is_not_per_step_but_a_plain_assignment_is():
    source = """
        import torch
        bank = None
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            if bank is None:
                bank = torch.zeros(128, 16).cuda()
            if not hasattr(model, "queue"):
                model.queue = torch.randn(4, 4).cuda()
            if bank is None:
                print("no bank")
                scratch = torch.zeros(3).cuda()
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT305") == {11}


def test_cpu_branch_of_a_device_check_is_not_a_sync_but_an_unconditional_cpu_copy_is():
    source = """
        import torch
        for x, y in loader:
            out = model(x)
            feats = out.cuda(0) if on_gpu else out.cpu()
            if use_cuda:
                z = out.cuda()
            else:
                z = out.cpu()
            if is_transformer:
                w = out.to(device)
            else:
                w = out.cpu()
            host = out.cpu()
            loss = out.sum()
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT101") == {12, 13}  # the model-type branch still copies


def test_a_multi_line_print_is_reported_at_the_line_reading_the_tensor():
    source = """
        import torch
        for step, (x, y) in enumerate(loader):
            loss = model(x).sum()
            loss.backward()
            opt.step()
            print(
                "step", step,
                "loss", loss.item(),
            )
            print("loss", loss.item())
    """
    assert lines(source, "TT102") == {8, 10}


def test_the_body_of_a_branch_that_ends_the_run_is_not_per_step_but_its_test_is():
    source = """
        import sys
        import torch
        for x, y in loader:
            loss = model(x).sum()
            if torch.isnan(loss):
                print("Loss is {}, stopping".format(loss.item()))
                sys.exit(1)
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT102") == set()
    assert lines(source, "TT103") == {5}


def test_lazy_initialisation_under_a_rank_guard_and_cpu_branch_named_after_the_device():
    source = """
        import torch
        features = None
        for samples, index in loader:
            samples = samples.cuda(non_blocking=True)
            feats = model(samples)
            if rank == 0 and features is None:
                features = torch.zeros(10, feats.shape[-1])
                features = features.cuda(non_blocking=True)
            if use_cuda:
                features.index_copy_(0, index, feats)
            else:
                features.index_copy_(0, index.cpu(), feats.cpu())
            host = feats.cpu()
    """
    assert lines(source, "TT305") == set()
    assert lines(source, "TT101") == {13}


def test_shapes_unpacked_from_a_batch_tensor_are_python_ints():
    source = """
        import torch

        def resize(x, w, h):
            if w == h:
                return x
            return x[:, : int(w)]

        for x, y in loader:
            B, C, w, h = x.shape
            n = x.size(0)
            out = resize(x, w, h)
            loss = model(out).sum()
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT103") == set()
    assert lines(source, "TT101") == set()


def test_loader_read_through_a_logging_wrapper_in_the_same_file_is_read_every_epoch():
    source = """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, batch_size=8, num_workers=4)
        once = DataLoader(ds, batch_size=8, num_workers=4)

        def train_one_epoch(model, data_loader, opt):
            for x, y in metric_logger.log_every(data_loader, 10, "train"):
                loss = model(x).sum()
                loss.backward()
                opt.step()

        for epoch in range(10):
            train_one_epoch(model, loader, opt)
        for x, y in once:
            out = model(x)
    """
    assert lines(source, "TT304") == {2}


def test_a_once_per_epoch_function_named_like_a_model_is_not_a_forward():
    from torchtriage.analysis.context import ModuleContext
    from torchtriage.analysis.hotloops.finder import find_hot_loops
    import ast

    source = textwrap.dedent("""
        import torch
        from viz import render_with_model

        def validate_network(val_loader, model):
            for x, y in val_loader:
                out = model(x)

        for epoch in range(10):
            validate_network(val_loader, model)
            render_with_model(model, noise)
        for step in range(100):
            out = model(noise)
    """).lstrip("\n")
    hot = find_hot_loops(ModuleContext(source, ast.parse(source)))
    assert sorted(r.node.lineno for r in hot.step_loops) == [5, 11]
    assert [loop.lineno for loop in hot.epoch_loops] == [8]


def test_rank_formatted_cuda_devices_count_as_cuda():
    for spelling in ('torch.device("cuda:{}".format(rank))', 'torch.device(f"cuda:{local_rank}")', 'torch.device("cuda:%d" % rank)',
                     'torch.device("cuda:" + str(args.dev))'):
        source = f"""
            import torch
            device = {spelling}
            for x, y in loader:
                x = x.to(device)
                loss = model(x).sum()
                loss.backward()
                opt.step()
        """
        assert lines(source, "TT301") == {4}, spelling
    cpu = """
        import torch
        device = torch.device("cpu:{}".format(rank))
        for x, y in loader:
            x = x.to(device)
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """
    assert lines(cpu, "TT301") == set()


def test_retain_graph_in_a_step_loop_nested_in_an_epoch_loop():
    source = """
        import torch
        for epoch in range(10):
            for x, y in loader:
                loss = model(x).sum()
                loss.backward(retain_graph=True)
                opt.step()
    """
    assert lines(source, "TT506") == {5}
    carried = """
        import torch
        for epoch in range(10):
            hidden = model.init_hidden()
            for x, y in loader:
                out, hidden = model(x, hidden)
                loss = out.sum()
                loss.backward(retain_graph=True)
                opt.step()
    """
    assert lines(carried, "TT506") == set()


def test_a_batch_sliced_from_a_host_tensor_by_the_step_counter_is_a_blocking_copy():
    source = """
        import torch
        device = torch.device("cuda")
        for i in range(0, corpus.size(1) - 64, 64):
            x = corpus[:, i:i + 64].to(device)
            w = weights[0].to(device)
            loss = model(x).sum()
            loss.backward()
            opt.step()
    """
    assert lines(source, "TT301") == {4}
