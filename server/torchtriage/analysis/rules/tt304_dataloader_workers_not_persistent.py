"""TT304: a DataLoader with workers, re-iterated every epoch, that restarts them each time."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Applicability, Severity
from ..hotloops.finder import HotRegion
from ._generators import batch_generators, repeating_generator
from ._bindings import parameter_names
from ._loaders import (
    called_name, dataloader_calls, handed_on_every_epoch, held_name, is_false, literal, loader_name, loader_reads_elsewhere, loops_reading,
    resolution_note, set_keyword_fix, setting,
    returned_and_iterated,
)
from ..defaults import CpuCount, cpu_count_expression
from .base import Invalid, Report, Rule, RuleContext, Valid


def is_positive(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> bool:
    """A worker count known to be above zero: a positive literal, or a number of CPUs (``os.cpu_count()``,
    ``mp.cpu_count() - 1``, ``min(8, os.cpu_count())``), written in the call or as the knob's default."""
    value = literal(ctx, expr, at)
    if isinstance(value, CpuCount):
        return True
    if isinstance(value, int) and not isinstance(value, bool):
        return value > 0
    return cpu_count_expression(expr)


def worker_knob(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> bool:
    """A worker count set outside the code (``args.workers``, ``cfg["train"]["n_workers"]``) with no
    default this analysis can read: a knob that names workers is there to ask for some, so it counts as
    above zero (in the labelled repositories, 14 of 15 such loaders were marked as restarting their workers)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and len(expr.args) == 1:
        expr = expr.args[0]  # ``int(opt.workers)``
    if not isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)) or literal(ctx, expr, at) is not ...:
        return False
    return "worker" in ctx.segment(expr).lower()


def call_at(ctx: "RuleContext", line: int, col: int) -> ast.Call | None:
    """The call that starts at ``line``/``col`` (where a loader read by another file is passed)."""
    for node in ctx.nodes_of(ast.Call):
        if node.lineno == line and node.col_offset == col:  # type: ignore[attr-defined]
            return node  # type: ignore[return-value]
    return None


def _inside(ctx: RuleContext, node: ast.AST, containers: list[ast.AST]) -> bool:
    return any(ancestor in containers for ancestor in ctx.ancestors(node))


def _read_every_epoch(ctx: RuleContext, region: HotRegion, creation: ast.Call) -> bool:
    """Whether a step loop runs once per epoch on a loader created outside the epoch loop."""
    epochs: list[ast.AST] = list(ctx.hot.epoch_loops)
    if _inside(ctx, creation, epochs):
        return False  # a fresh loader every epoch: persistence cannot help
    if _inside(ctx, region.node, epochs):
        return True
    function = ctx.enclosing_function(region.node)
    if function is None:
        return False
    name = loader_name(ctx, creation)
    scope = ctx.enclosing_function(creation)
    for loop in epochs:
        owner = ctx.enclosing_function(loop)
        if name is not None and owner is not scope and name not in parameter_names(owner):
            continue  # another function's loop, where the name is its own local: another loader
        for node in ast.walk(loop):
            if isinstance(node, ast.Call) and called_name(node) == function.name and (
                name is None or _passes(node, name) or (scope is None and name not in parameter_names(function))
            ):
                return True  # ``for epoch ...: validate(model, val_loader)``, or ``test(epoch)`` reading the global loader
    return False


def _passes(call: ast.Call, name: str) -> bool:
    """The call hands the loader on (``validate(model, val_loader)``), or takes nothing to name it by."""
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return not arguments or any(isinstance(n, (ast.Name, ast.Subscript)) and held_name(n) == name
                                for a in arguments for n in ast.walk(a))


def _mutates_dataset_per_epoch(ctx: RuleContext, loops: list) -> bool:  # type: ignore[type-arg]
    """``train_set.set_epoch(e)`` and the like: persistent workers would keep a stale copy."""
    for loop in loops:
        for node in ast.walk(loop):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = node.func.value
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t.value for t in targets if isinstance(t, ast.Attribute)), None)
            text = ((ctx.dotted(target) or "") if target is not None else "").lower()
            if "dataset" in text or text.endswith(("_set", "_ds", "_data")):
                return True
    return False


class DataLoaderWorkersNotPersistent(Rule):
    code = "TT304"
    name = "dataloader-workers-not-persistent"
    severity = Severity.INFO
    category = "data_loading"
    requires_cuda = False
    summary = "A DataLoader with workers is iterated once per epoch without `persistent_workers=True`."
    why = """
        Without persistent workers, every `for batch in loader` starts the worker
        processes again: each one re-imports the script (on spawn platforms),
        unpickles the dataset and refills its prefetch queue before the first
        batch of the epoch arrives. The device waits for all of that at the start
        of every epoch, the same idle-accelerator gap that makes data loading the
        most common bottleneck in first profiles.
    """
    fix_description = """
        Set `persistent_workers=True` so the workers live across epochs.
        `prefetch_factor` is left alone (its default of 2 is a reasonable start;
        guides suggest trying about 4 when the loader is the bottleneck). Not
        flagged when the epoch loop changes the dataset object (for example
        `dataset.set_epoch(epoch)`), since persistent workers keep their own copy.
    """
    fix_applicability = Applicability.SAFE
    example_bad = """
        loader = DataLoader(train_set, batch_size=64, num_workers=8)
        for epoch in range(epochs):
            for x, y in loader:
                ...
    """
    example_good = """
        loader = DataLoader(train_set, batch_size=64, num_workers=8, persistent_workers=True)
    """
    VALID = (
        Valid(
            """
            # a fresh loader on each call of fit(); the progress bar's "Epoch" label makes no epoch loop
            from torch.utils.data import DataLoader
            from tqdm import tqdm

            def fit(model, dataset, optimizer, epoch):
                dl = DataLoader(dataset, batch_size=256, shuffle=True, num_workers=5)
                for batch in tqdm(dl, leave=False, desc="Epoch {:<3}".format(epoch)):
                    loss = model(batch).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=8, persistent_workers=True)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # read once: no epoch loop
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=8)
            for x, y in loader:
                loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # a new loader every epoch (curriculum): persistence cannot help
            from torch.utils.data import DataLoader
            for epoch in range(10):
                loader = DataLoader(make_subset(epoch), batch_size=64, num_workers=8)
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # an unknown count that does not name workers
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=args.threads)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # the command line's default is no workers
            import argparse
            from torch.utils.data import DataLoader
            parser = argparse.ArgumentParser()
            parser.add_argument("--workers", type=int, default=0)
            args = parser.parse_args()
            loader = DataLoader(ds, batch_size=64, num_workers=args.workers)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # the dataset changes between epochs: workers must see the new state
            from torch.utils.data import DataLoader
            loader = DataLoader(train_dataset, batch_size=64, num_workers=8)
            for epoch in range(10):
                train_dataset.set_epoch(epoch)
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            # only the loader's length is read each epoch; the second loader is made anew every epoch anyway
            import torch

            def main(opt):
                train_loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=4)
                for epoch in range(opt.num_epochs):
                    print(epoch, len(train_loader))
                    fresh = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=4)
                    trainer.train(epoch, fresh)
            """
        ),
        Valid(
            """
            # a dict of loaders whose entries are each iterated once
            from torch.utils.data import DataLoader

            loaders = {"train": DataLoader(train_set, batch_size=32, num_workers=4)}
            for x, y in loaders["train"]:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # loaders kept in a dict, each entry iterated every epoch (the train one through a function)
            import torch
            from torch.utils.data import DataLoader

            loaders = {
                "train": DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4),
                "test": DataLoader(test_set, batch_size=32, num_workers=4),
            }

            def train_epoch(loader):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()

            for epoch in range(100):
                train_epoch(loaders["train"])
                with torch.no_grad():
                    for x, y in loaders["test"]:
                        model(x)
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            # PyG before 2.0 named its loader torch_geometric.data.DataLoader: a torch DataLoader all the same
            from torch_geometric.data import DataLoader
            train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True, num_workers=4)
            for epoch in range(100):
                for batch in train_loader:
                    loss = model(batch).sum(); loss.backward(); optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            # a worker count from a config file this code cannot read: a knob that names workers asks for some
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=cfg["training"]["n_workers"])
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
            findings=(("3:10-3:20", "Workers of this DataLoader restart every epoch: set `persistent_workers=True` "
                                    "(`cfg[\"training\"][\"n_workers\"]` is set outside this code: taken to ask for workers)"),),
        ),
        Invalid(
            """
            # Lightning calls the hook once and iterates the loader every epoch
            import pytorch_lightning as pl
            from torch.utils.data import DataLoader

            class System(pl.LightningModule):
                def train_dataloader(self):
                    return DataLoader(self.train_set, batch_size=1024, num_workers=4, shuffle=True)
            """,
            lines=(7,),
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=8)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
            lines=(2,),
            fixed="""
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=64, num_workers=8, persistent_workers=True)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
        ),
        Invalid(
            """
            import os
            import torch

            def train_one_epoch(model, data_loader, optimizer):
                model.train()
                for images, targets in data_loader:
                    loss = model(images, targets)
                    optimizer.zero_grad(); loss.backward(); optimizer.step()

            def main():
                kwargs = {"batch_size": 32, "num_workers": os.cpu_count(), "persistent_workers": False}
                train_loader = torch.utils.data.DataLoader(train_set, **kwargs)
                for epoch in range(args.epochs):
                    train_one_epoch(model, train_loader, optimizer)
            """,
            lines=(12,),
        ),
        Invalid(
            """
            # the worker count defaults to a number of CPUs (the command-line default of many scripts)
            import argparse
            import multiprocessing as mp
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--num-workers", type=int, default=mp.cpu_count() - 1)
            args = parser.parse_args()
            loader = torch.utils.data.DataLoader(train_set, batch_size=64, num_workers=args.num_workers)
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x).sum(); loss.backward(); optimizer.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader
            train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
            step = 0
            while step < max_steps:
                for batch in train_loader:
                    loss = model(batch).mean(); loss.backward(); optimizer.step()
                    step += 1
            """,
            lines=(2,),
        ),
        Invalid(
            """
            # consumed through a generator that re-iterates the loader on every pass
            from torch.utils.data import DataLoader
            def infinite(loader):
                while True:
                    yield from loader
            loader = DataLoader(train_set, batch_size=64, num_workers=4)
            for step, batch in zip(range(10_000), infinite(loader)):
                loss = model(batch).mean(); loss.backward(); optimizer.step()
            """,
            findings=(
                ("6:10-6:20", "Workers of this DataLoader restart every epoch: set `persistent_workers=True` "
                 "(the generator `infinite` iterates it again on every pass over the data)"),
            ),
        ),
        Invalid(
            """
            # an iterator drawn from with the old ``it.next()`` and made again whenever it runs out
            from torch.utils.data import DataLoader
            loader = DataLoader(train_set, batch_size=64, num_workers=4)
            it = iter(loader)
            for epoch in range(10):
                for step in range(500):
                    try:
                        x, y = it.next()
                    except StopIteration:
                        it = iter(loader)
                        x, y = it.next()
                    loss = model(x).mean(); loss.backward(); optimizer.step()
            """,
            findings=(("3:10-3:20", "Workers of this DataLoader restart every epoch: set `persistent_workers=True`"),),
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader
            from tqdm import tqdm

            loader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=8, pin_memory=True)
            for epoch in range(100):
                pbar = tqdm(loader)  # a progress bar over the loader, made every epoch
                for x, _ in pbar:
                    loss = model(x.cuda(non_blocking=True)).mean()
                    loss.backward()
            """,
            findings=(("5:10-5:20", "Workers of this DataLoader restart every epoch: set `persistent_workers=True`"),),
        ),
        Invalid(
            """
            import argparse
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument('--workers', type=int, default=4)
            opt = parser.parse_args()
            loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=int(opt.workers))
            for epoch in range(10):
                for points, target in loader:
                    loss = model(points.cuda(non_blocking=True)).mean()
                    loss.backward()
            """,
            findings=(
                ("6:10-6:37", "Workers of this DataLoader restart every epoch: set `persistent_workers=True` "
                              "(`opt.workers` is 4: the `--workers` default (<string>:4))"),
            ),
        ),
        Invalid(
            """
            import torch
            trainloader = torch.utils.data.DataLoader(trainset, batch_size=128, shuffle=True, num_workers=8, pin_memory=True)


            def train(epoch):  # reads the module's loader: every call iterates it again
                for inputs, targets in trainloader:
                    loss = criterion(net(inputs.cuda(non_blocking=True)), targets.cuda(non_blocking=True))
                    loss.backward()
                    optimizer.step()


            for epoch in range(60):
                train(epoch)
            """,
            findings=(("2:15-2:42", "Workers of this DataLoader restart every epoch: set `persistent_workers=True`"),),
        ),
        Invalid(
            """
            # handed every epoch to a trainer the project cannot resolve (picked from a registry): iterated every epoch
            import torch
            from trains import train_factory

            def main(opt):
                trainer = train_factory[opt.task](opt, model, optimizer)
                train_loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
                for epoch in range(opt.num_epochs):
                    log = trainer.train(epoch, train_loader)
            """,
            findings=(("7:20-7:47", "Workers of this DataLoader restart every epoch: set `persistent_workers=True` "
                                    "(handed to `trainer.train` in the epoch loop at line 8, every epoch)"),),
        ),
        Invalid(
            """
            # kept in a dict of loaders and read by phase every epoch
            from torch.utils.data import DataLoader
            train_loader = DataLoader(train_set, batch_size=20, shuffle=True, num_workers=4)
            val_loader = DataLoader(val_set, batch_size=20, num_workers=4)
            loaders = {"train": train_loader, "val": val_loader}
            for epoch in range(30):
                for phase in ["train", "val"]:
                    for x, y in loaders[phase]:
                        loss = model(x).sum()
                        if phase == "train":
                            loss.backward(); optimizer.step()
            """,
            lines=(3, 4),
        ),
        Invalid(
            """
            # evaluated every epoch from a list zipped with the split names
            from torch.utils.data import DataLoader
            train_loader = DataLoader(train_set, batch_size=20, shuffle=True, num_workers=4)
            valid_loader = DataLoader(valid_set, batch_size=20, num_workers=4)
            test_loader = DataLoader(test_set, batch_size=20, num_workers=4)
            for epoch in range(30):
                for x, y in train_loader:
                    model(x).sum().backward(); optimizer.step()
                for loader, split in zip([valid_loader, test_loader], ["validation", "test"]):
                    for x, y in loader:
                        model(x)
            """,
            lines=(3, 4, 5),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        if (not ctx.hot.epoch_loops and not ctx.loader_reads and not batch_generators(ctx) and not ctx.returned_loaders
                and "_dataloader" not in ctx.source and "epoch" not in ctx.source):
            return
        if _mutates_dataset_per_epoch(ctx, list(ctx.hot.epoch_loops)):
            return
        for call in dataloader_calls(ctx):
            workers = setting(ctx, call, "num_workers")
            if not workers.all_values(lambda v: is_positive(ctx, v, call) or worker_knob(ctx, v, call), default_matches=False):
                continue
            knobs = [ctx.segment(v) for v in workers.values if worker_knob(ctx, v, call)]
            persistent = setting(ctx, call, "persistent_workers")
            if not persistent.all_values(lambda v: is_false(ctx, v, call), default_matches=True):
                continue
            note = ""
            if not any(_read_every_epoch(ctx, region, call) for region in loops_reading(ctx, call)):
                where = _read_every_epoch_elsewhere(ctx, call)
                hook = _lightning_hook(ctx, call) if where is None else None
                generator = repeating_generator(ctx, call, loader_name(ctx, call)) if where is None and hook is None else None
                returned = [r for r in returned_and_iterated(ctx, call) if r.every_epoch] if where is None and generator is None else []
                handed = handed_on_every_epoch(ctx, call) if where is None and hook is None and generator is None \
                    and not returned else None
                if hook is not None:
                    note = f" (Lightning iterates what `{hook}` returns every epoch)"
                elif where is not None:
                    note = f" (iterated by the step loop at {where}, called once per epoch)"
                elif generator is not None:
                    note = f" (the generator `{generator}` iterates it again on every pass over the data)"
                elif returned:
                    read = returned[0]
                    note = f" (`{read.factory}` returns it to {read.via}; the step loop at {read.where} iterates it every epoch)"
                elif handed is not None:
                    note = f" (handed to `{handed[0]}` in the epoch loop at line {handed[1]}, every epoch)"
                else:
                    continue
            yield Report(
                call.func,
                "Workers of this DataLoader restart every epoch: set `persistent_workers=True`"
                + resolution_note(ctx, workers.values, call) + note
                + (f" (`{knobs[0]}` is set outside this code: taken to ask for workers)" if knobs else ""),
                fix=lambda call=call, persistent=persistent: set_keyword_fix(
                    ctx, call, "persistent_workers", persistent, "True", "Set persistent_workers=True",
                    Applicability.SAFE,
                ),
            )


_LIGHTNING_HOOKS = frozenset({"train_dataloader", "val_dataloader"})  # loaders Lightning iterates every epoch


def _lightning_hook(ctx: RuleContext, creation: ast.Call) -> str | None:
    """The ``train_dataloader`` / ``val_dataloader`` hook of a LightningModule or LightningDataModule the
    loader is made in (Lightning calls it once and iterates the loader every epoch), else None."""
    function = ctx.enclosing_function(creation)
    if function is None or function.name not in _LIGHTNING_HOOKS:
        return None
    cls = next((a for a in ctx.ancestors(function) if isinstance(a, ast.ClassDef)), None)
    bases = [ctx.dotted(b) or "" for b in cls.bases] if cls is not None else []
    return function.name if any("Lightning" in b or b.endswith("DataModule") for b in bases) else None


def _read_every_epoch_elsewhere(ctx: RuleContext, creation: ast.Call) -> str | None:
    """A loader handed, inside a loop, to another file's function whose step loop iterates it
    (``for epoch ...: train_one_epoch(model, loader, ...)``), and created outside that loop; or handed to a
    class whose method iterates it inside an epoch loop of its own (``Solver(loader)``)."""
    for read in loader_reads_elsewhere(ctx, creation):
        if read.every_epoch:
            return read.where
        passing = call_at(ctx, read.line, read.col)
        if passing is None:
            continue
        loops = [a for a in ctx.ancestors(passing) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))]
        outer = [loop for loop in loops if not _inside(ctx, creation, [loop])]
        if outer and not _mutates_dataset_per_epoch(ctx, outer):
            return read.where
    return None
