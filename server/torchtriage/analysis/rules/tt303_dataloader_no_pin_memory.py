"""TT303: a DataLoader feeding a CUDA step loop without ``pin_memory=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ._loaders import (
    dataloader_calls, is_false, loader_name, loader_reads_elsewhere, resolution_note, loops_reading, moves_data_to_device, read_once_only,
    set_keyword_fix, setting, returned_and_iterated,
)
from .base import Invalid, Report, Rule, RuleContext, Valid


class DataLoaderNoPinMemory(Rule):
    code = "TT303"
    name = "dataloader-no-pin-memory"
    severity = Severity.WARNING
    category = "data_loading"
    requires_cuda = True
    summary = "A DataLoader whose batches are copied to the GPU does not set `pin_memory=True`."
    why = """
        A copy from ordinary (pageable) host memory goes through a staging
        buffer and cannot overlap with GPU work, so even `non_blocking=True`
        copies end up blocking the CPU. With `pin_memory=True` the workers hand
        over page-locked batches that the GPU copies asynchronously while the
        previous step still runs. Transfers are part of the data-loading
        bottleneck, the one guides tell you to check first: it is the most
        common finding in first profiles, with the GPU idle 30-50 % of each step.
    """
    fix_description = "Set `pin_memory=True` on the DataLoader, and copy with `.to(device, non_blocking=True)` (TT301)."
    fix_applicability = Applicability.SAFE
    example_bad = """
        loader = DataLoader(train_set, batch_size=64, num_workers=8)
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    """
    example_good = """
        loader = DataLoader(train_set, batch_size=64, num_workers=8, pin_memory=True)
    """
    VALID = (
        Valid(
            """
            # the loop's data meets the device only in a tensor made there, and a GPU count
            import torch
            from torch.utils.data import DataLoader
            x = graph_features.cuda()
            for perm in DataLoader(range(edges.size(0)), batch_size, shuffle=True):
                negatives = torch.randint(0, x.size(0), perm.size(), device=x.device)
                loss = model(x, edges[perm], negatives).sum(); loss.backward(); optimizer.step()
                reduced = reduce_tensor(loss.detach(), n_gpus)
            """
        ),
        Valid(
            """
            import torch
            loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=8, pin_memory=True)
            for x, y in loader:
                x = x.cuda(non_blocking=True)
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # pin only where an accelerator exists
            import torch
            from torch.utils.data import DataLoader
            use_cuda = torch.cuda.is_available()
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=use_cuda)
            for x, y in loader:
                loss = model(x.cuda()).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # pytorch/examples mnist: pin_memory arrives through a conditional update
            import torch
            train_kwargs = {"batch_size": 64}
            if use_cuda:
                cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
                train_kwargs.update(cuda_kwargs)
            train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
            for data, target in train_loader:
                data, target = data.to(device), target.to(device)
                loss = model(data).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # the dataset already lives on the GPU: pinning would fail
            import torch
            from torch.utils.data import DataLoader
            ds = MyDataset(torch.load("feats.pt").cuda())
            loader = DataLoader(ds, batch_size=64)
            for x, y in loader:
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # two functions each with a local ``loader``: only the GPU one's batches are copied, and it pins
            import torch
            from torch.utils.data import DataLoader

            def train_gpu(ds, model, optimizer):
                loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True, persistent_workers=True)
                for x, y in loader:
                    loss = model(x.cuda(non_blocking=True)).sum(); loss.backward(); optimizer.step()

            def train_cpu(ds, model, optimizer):
                loader = DataLoader(ds, batch_size=64, num_workers=4, persistent_workers=True)
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # no CUDA anywhere in the file
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=4)
            for x, y in loader:
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # a loader drawn from only by a sample every N steps (next(iter(...))), never by the step loop
            import torch
            from torch.utils.data import DataLoader

            loader = DataLoader(train_set, batch_size=64, num_workers=8, pin_memory=True, persistent_workers=True)
            samples = DataLoader(test_set, batch_size=5, num_workers=1)
            Tensor = torch.cuda.FloatTensor

            def sample_images(done):
                imgs = next(iter(samples))
                save(model(imgs.type(Tensor)), done)

            for i, (x, y) in enumerate(loader):
                loss = model(x.cuda(non_blocking=True)).mean()
                loss.backward()
                if i % 500 == 0:
                    sample_images(i)
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # a collate that returns groups of batches: the step loop is the one over each group's batches
            import torch
            from torch.utils.data import DataLoader

            loader = DataLoader(dataset, batch_size=64, collate_fn=dataset.collate_groups, num_workers=4,
                                persistent_workers=True)
            for epoch in range(epochs):
                for groups in loader:
                    for batch in groups:
                        batch = to_device(batch, torch.device("cuda"))
                        loss = model(*batch).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
            """,
            lines=(5,),
        ),
        Invalid(
            """
            # the batch is handed to a helper together with the device: that is what the helper is for
            import torch
            from torch.utils.data import DataLoader
            from utils import to_device
            device = torch.device("cuda")
            loader = DataLoader(ds, batch_size=16, num_workers=4)
            for batch in loader:
                batch = to_device(batch, device)
                loss = model(*batch[2:]).sum(); loss.backward(); optimizer.step()
            """,
            lines=(6,),
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader
            device = torch.device("cuda")
            loader = DataLoader(ds, batch_size=64, num_workers=8)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
            lines=(4,),
            fixed="""
            import torch
            from torch.utils.data import DataLoader
            device = torch.device("cuda")
            loader = DataLoader(ds, batch_size=64, num_workers=8, pin_memory=True)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch
            train_loader = torch.utils.data.DataLoader(
                train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=False
            )

            def train(model, loader, optimizer):
                for batch in loader:
                    batch = {k: v.cuda() for k, v in batch.items()}
                    loss = model(**batch).loss
                    loss.backward()
                    optimizer.step()

            for epoch in range(3):
                train(model, train_loader, optimizer)
            """,
            lines=(2,),
            fixed="""
            import torch
            train_loader = torch.utils.data.DataLoader(
                train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True
            )

            def train(model, loader, optimizer):
                for batch in loader:
                    batch = {k: v.cuda() for k, v in batch.items()}
                    loss = model(**batch).loss
                    loss.backward()
                    optimizer.step()

            for epoch in range(3):
                train(model, train_loader, optimizer)
            """,
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def build_loaders(cfg):
                kw = {"batch_size": cfg.bs, "num_workers": 8, "pin_memory": False}
                return DataLoader(train_ds, shuffle=True, **kw), DataLoader(val_ds, **kw)

            train_dl, val_dl = build_loaders(cfg)
            for images, labels in train_dl:
                loss = criterion(model(images.to("cuda")), labels.to("cuda"))
                loss.backward(); optimizer.step()
            """,
            lines=(6, 6),
        ),
        Invalid(
            """
            # an iterator made over the loader in place, its batches fetched with next() and copied to the GPU
            import torch
            from torch.utils import data
            content_iter = iter(data.DataLoader(content_set, batch_size=8, num_workers=16))
            for i in range(160000):
                images = next(content_iter).to("cuda")
                loss = network(images)
                optimizer.zero_grad(); loss.backward(); optimizer.step()
            """,
            lines=(4,),
        ),
        Invalid(
            """
            # handed to the trainer, which rebinds its name to an endless iterator and fetches with next()
            import torch
            from torch.utils import data

            def sample_data(loader):
                while True:
                    for batch in loader:
                        yield batch

            def train(args, loader, generator, g_optim, device):
                loader = sample_data(loader)
                for idx in range(args.iter):
                    real_img = next(loader)
                    real_img = real_img.to(device)
                    loss = generator(real_img).mean()
                    g_optim.zero_grad(); loss.backward(); g_optim.step()

            if __name__ == "__main__":
                loader = data.DataLoader(dataset, batch_size=args.batch, drop_last=True)
                train(args, loader, generator, g_optim, "cuda")
            """,
            lines=(19,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call in dataloader_calls(ctx):
            pinned = setting(ctx, call, "pin_memory")
            if not pinned.all_values(lambda v: is_false(ctx, v, call), default_matches=True):
                continue
            loops = loops_reading(ctx, call)
            if not loops and (_drawn_only_off_step(ctx, call) or read_once_only(ctx, call)):
                continue  # ``next(iter(val_loader))`` in a function no step runs (a sample every N steps), or the final test's loader
            note = ""
            if not moves_data_to_device(ctx, loops or None):
                elsewhere = [r for r in loader_reads_elsewhere(ctx, call) if r.moves_to_device] if not loops else []
                if not elsewhere and not loops:
                    elsewhere = [r for r in returned_and_iterated(ctx, call) if r.moves_to_device]
                if not elsewhere:
                    continue
                note = f" (its batches are copied to the GPU in the step loop at {elsewhere[0].where})"
            yield Report(
                call.func,
                "Batches from this DataLoader are copied to the GPU from pageable memory: "
                "set `pin_memory=True` so copies can overlap compute" + resolution_note(ctx, pinned.values, call) + note,
                fix=lambda call=call, pinned=pinned: set_keyword_fix(
                    ctx, call, "pin_memory", pinned, "True", "Set pin_memory=True", Applicability.SAFE
                ),
            )


def _drawn_only_off_step(ctx: RuleContext, call: ast.Call) -> bool:
    """Every use of the loader's name is ``iter(name)`` in code that does not run every step."""
    name = loader_name(ctx, call)
    if name is None:
        return False
    uses = [n for n in ctx.nodes_of(ast.Name) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    if not uses:
        return False
    hot = {node for node, _ in ctx.hot.nodes(ast.Call)}
    for use in uses:
        parent = ctx.parents.get(use)
        if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "iter") or parent in hot:
            return False
    return True
