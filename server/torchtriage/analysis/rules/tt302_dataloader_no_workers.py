"""TT302: a DataLoader that loads every batch in the main process (``num_workers=0``)."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from ...findings import Applicability, Severity
from ..syntax import keyword_value
from ._bindings import resolve_choices, resolve_name
from ._helpers import is_device_move
from ._loaders import literal, resolution_note, dataloader_calls, set_keyword_fix, setting
from .base import Invalid, Report, Rule, RuleContext, Valid

SUGGESTED_WORKERS = "4"
_IN_MEMORY_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
_STREAMING_NAME = re.compile(r"(^|[_.])iter|iterable|stream", re.I)


def is_zero(ctx: "RuleContext", expr: ast.expr, at: ast.AST) -> bool:
    value = literal(ctx, expr, at)
    return value == 0 and not isinstance(value, bool) and value is not ...


def is_in_memory_dataset(ctx: "RuleContext", call: ast.Call) -> bool:
    """``DataLoader(TensorDataset(...))`` and friends: workers only add IPC there."""
    dataset = _dataset_argument(call)
    if isinstance(dataset, ast.Name):
        choices = resolve_choices(ctx, dataset.id, call)  # ``if cats: ds = TensorDataset(x, y, c) else: ds = TensorDataset(x, y)``
        if len(choices) > 1:
            return all(_in_memory(ctx, choice) for choice in choices)
        dataset = resolve_name(ctx, dataset.id, call) or dataset
    return _in_memory(ctx, dataset)


def _in_memory(ctx: "RuleContext", dataset: ast.expr | None) -> bool:
    if isinstance(dataset, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if not isinstance(dataset, ast.Call):
        return False
    qual = ctx.call_qualname(dataset) or ""
    # TensorDataset, range(...), list(...), or a tensor made by a torch factory (torch.randn(...)).
    made_by_torch = qual.count(".") == 1 and qual.startswith("torch.")
    return qual in _IN_MEMORY_DATASETS or qual in ("range", "list") or made_by_torch


def _hands_out_device_tensors(ctx: "RuleContext", call: ast.Call) -> bool:
    """A dataset of a class of this file whose ``__getitem__`` moves what it returns to the GPU (``return
    seq.cuda()``, the text sampler of many language-model scripts): worker processes cannot use CUDA, so
    the loader stays in the training process; the data already sits in memory."""
    getitem = _getitem_of_dataset(ctx, call)
    return getitem is not None and any(isinstance(node, ast.Call) and is_device_move(node, ctx) for node in ast.walk(getitem))


def _indexes_held_data(ctx: "RuleContext", call: ast.Call) -> bool:
    """A dataset of a class of this file whose ``__getitem__`` only indexes what the instance holds and wraps it in
    tensors (``return torch.tensor(self.encoded[i]), torch.tensor(self.labels[i])``: texts tokenised once in
    ``__init__``): the ``TensorDataset`` case written by hand; workers would only add IPC."""
    getitem = _getitem_of_dataset(ctx, call)
    if getitem is None:
        return False
    for node in ast.walk(getitem):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.comprehension, ast.With, ast.Lambda, ast.Await)):
            return False  # per-element work, files, ...: workers could help
        if isinstance(node, ast.Call) and (ctx.call_qualname(node) or "") not in _WRAPPING_CALLS:
            return False
    return True


_WRAPPING_CALLS = frozenset({"torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.FloatTensor", "torch.from_numpy",
                             "len", "int", "float", "bool", "list", "tuple", "dict", "min", "max", "range", "slice"})


def _getitem_of_dataset(ctx: "RuleContext", call: ast.Call) -> ast.FunctionDef | None:
    """The ``__getitem__`` of the dataset a DataLoader call is given, when that is an instance of a class of this file."""
    dataset = _dataset_argument(call)
    if isinstance(dataset, ast.Name):
        dataset = resolve_name(ctx, dataset.id, call) or dataset
    if not (isinstance(dataset, ast.Call) and isinstance(dataset.func, ast.Name)):
        return None
    for cls in ctx.nodes_of(ast.ClassDef):
        if isinstance(cls, ast.ClassDef) and cls.name == dataset.func.id:
            return next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__getitem__"), None)
    return None


def _dataset_argument(call: ast.Call) -> ast.expr | None:
    """The dataset a DataLoader call is given: the last ``dataset=``, else the first argument."""
    dataset = keyword_value(call, "dataset", last=True)
    if dataset is None and call.args:
        dataset = call.args[0]
    return dataset


def is_streaming_dataset(ctx: "RuleContext", call: ast.Call) -> bool:
    """An iterable-style dataset (``IterableDataset`` subclass, ``*_iter``/``stream`` names).

    Workers there each replay the whole stream unless the dataset shards itself,
    so "add workers" is not a one-keyword change.
    """
    dataset = _dataset_argument(call)
    if dataset is None:
        return False
    words = [ctx.dotted(dataset.func if isinstance(dataset, ast.Call) else dataset) or ""]
    if isinstance(dataset, ast.Name):
        value = resolve_name(ctx, dataset.id, call)
        if isinstance(value, ast.Call):
            words.append(ctx.dotted(value.func) or "")
    iterable_classes = {
        node.name
        for node in ctx.nodes_of(ast.ClassDef)
        if isinstance(node, ast.ClassDef)
        and any((ctx.qualname(base) or "").endswith("IterableDataset") for base in node.bases)
    } | ctx.iterable_datasets  # and those imported from other project files
    return any(
        word.rsplit(".", 1)[-1] in iterable_classes or _STREAMING_NAME.search(word) for word in words
    )


def _is_one_shot(ctx: RuleContext, call: ast.Call) -> bool:
    """``next(iter(DataLoader(...)))``: one batch grabbed (sample images, a shape probe), never a loop; also a
    loader kept in a name whose every read is one such grab outside any loop (``fixed, _ = next(iter(test_loader))``)."""
    if _grabs_one_batch(ctx, call, None):
        return True
    parent = ctx.parents.get(call)
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):
        return False
    name = parent.targets[0].id
    scope = ctx.enclosing_function(call) or ctx.tree
    reads = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return bool(reads) and all(_grabs_one_batch(ctx, read, scope) for read in reads)


def _grabs_one_batch(ctx: RuleContext, node: ast.AST, scope: ast.AST | None) -> bool:
    """``next(iter(node))``, and (``scope`` given) in no loop of that scope."""
    parent = ctx.parents.get(node)
    grand = ctx.parents.get(parent) if parent is not None else None
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "iter"
            and isinstance(grand, ast.Call) and isinstance(grand.func, ast.Name) and grand.func.id == "next"):
        return False
    for ancestor in ctx.ancestors(node) if scope is not None else ():
        if ancestor is scope:
            break
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)):
            return False
    return True


class DataLoaderNoWorkers(Rule):
    code = "TT302"
    name = "dataloader-no-workers"
    severity = Severity.WARNING
    category = "data_loading"
    requires_cuda = False
    summary = "A DataLoader has no `num_workers` (or `num_workers=0`), so batches are loaded in the training process."
    why = """
        With no workers, reading, decoding and augmenting the next batch happens
        in the same process that launches the model, one after the other: the
        accelerator sits idle while the CPU prepares data. Data loading is the
        most common bottleneck in first profiles (roughly a quarter of teams),
        with the device idle 30-50 % of every step when `num_workers` is 0 or 1,
        and it is the cheapest one to fix because the model does not change.
        Datasets that are already in memory (`TensorDataset`, or a dataset class
        whose `__getitem__` only indexes what `__init__` prepared, such as texts
        tokenised once) are not flagged (workers only add copying there), nor are iterable-style
        datasets, where every worker replays the stream unless it is sharded.
    """
    fix_description = """
        Set `num_workers=4`. A good starting point is about half the physical
        cores, then sweep upwards while watching step time. Workers run the
        dataset in subprocesses: it must be picklable, and on platforms that
        spawn (Windows, macOS) the script needs an `if __name__ == "__main__":`
        guard, hence the fix is unsafe. Persistent workers (TT304) come next
        when the loader is read once per epoch.
    """
    fix_applicability = Applicability.UNSAFE
    example_bad = """
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    """
    example_good = """
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
    """
    VALID = (
        Valid(
            """
            # texts tokenised once into memory; __getitem__ only indexes them: a TensorDataset written by hand
            import torch
            from torch.utils.data import DataLoader, Dataset

            class SpamDataset(Dataset):
                def __init__(self, texts, labels, tokenizer):
                    self.encoded = [tokenizer.encode(t) for t in texts]
                    self.labels = labels

                def __len__(self):
                    return len(self.encoded)

                def __getitem__(self, index):
                    return torch.tensor(self.encoded[index], dtype=torch.long), torch.tensor(self.labels[index])

            loader = DataLoader(SpamDataset(texts, labels, tokenizer), batch_size=8, shuffle=True, num_workers=0)
            """
        ),
        Valid(
            """
            # a text sampler that hands out GPU tensors: workers could not use CUDA
            import torch
            from torch.utils.data import DataLoader, Dataset

            class TextSamplerDataset(Dataset):
                def __init__(self, data, seq_len):
                    self.data, self.seq_len = data, seq_len

                def __getitem__(self, index):
                    start = torch.randint(0, self.data.size(0) - self.seq_len, (1,))
                    return self.data[start : start + self.seq_len + 1].long().cuda()

                def __len__(self):
                    return self.data.size(0) // self.seq_len

            train_dataset = TextSamplerDataset(data_train, 1024)
            train_loader = DataLoader(train_dataset, batch_size=4)
            for batch in train_loader:
                loss = model(batch)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # one fixed batch drawn once for the image grid: workers would only add their start-up
            import torch
            test_loader = torch.utils.data.DataLoader(test_set, batch_size=16, shuffle=True)
            fixed_images, _ = next(iter(test_loader))
            for images, labels in train_loader:
                loss = model(images.cuda()).mean(); loss.backward(); optimizer.step()
            """
        ),
        Valid(
            """
            from torch.utils.data import DataLoader
            loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8)
            """
        ),
        Valid(
            """
            # workers from the command line: not ours to judge
            import torch
            loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, num_workers=args.workers)
            """
        ),
        Valid(
            """
            # pytorch/examples mnist: workers only on the accelerator path
            import torch
            train_kwargs = {"batch_size": args.batch_size}
            if use_accel:
                accel_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
                train_kwargs.update(accel_kwargs)
            train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
            """
        ),
        Valid(
            """
            # settings from a yaml file
            from torch.utils.data import DataLoader
            cfg = yaml.safe_load(open("config.yaml"))
            loader = DataLoader(dataset, **cfg["loader"])
            """
        ),
        Valid(
            """
            # tensors already in memory: workers would only add IPC
            import torch
            from torch.utils.data import DataLoader, TensorDataset
            ds = TensorDataset(torch.randn(1000, 10), torch.randn(1000))
            loader = DataLoader(ds, batch_size=32, shuffle=True)
            probe = DataLoader(torch.randn(10, 32), batch_size=2)
            """
        ),
        Valid(
            """
            # iterable-style datasets: each worker would replay the whole stream
            from torch.utils.data import DataLoader, IterableDataset
            class Shards(IterableDataset):
                def __iter__(self):
                    yield from read_shards()
            train_iter = make_text_iter("train")
            train_dl = DataLoader(train_iter, batch_size=32, collate_fn=collate)
            shard_dl = DataLoader(Shards(), batch_size=32)
            """
        ),
        Valid(
            """
            # something else called DataLoader
            from mylib import DataLoader
            loader = DataLoader(path, batch_size=32)
            """
        ),
        Valid(
            """
            # a TensorDataset on either branch: in memory whichever the run takes
            import torch
            from torch.utils.data import DataLoader, TensorDataset
            if cat_x is not None:
                train_set = TensorDataset(x, y, cat_x)
            else:
                train_set = TensorDataset(x, y)
            loader = DataLoader(train_set, batch_size=256)
            for batch in loader:
                loss = model(*[t.cuda(non_blocking=True) for t in batch]).mean()
                loss.backward()
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # __getitem__ reads and transforms an image per item: the work workers would take off the step
            import torch
            from PIL import Image
            from torch.utils.data import DataLoader, Dataset

            class Images(Dataset):
                def __init__(self, paths, transform):
                    self.paths, self.transform = paths, transform

                def __getitem__(self, index):
                    return self.transform(Image.open(self.paths[index]))

            loader = DataLoader(Images(paths, transform), batch_size=8, shuffle=True, num_workers=0)
            """,
            lines=(13,),
        ),
        Invalid(
            """
            # a batch drawn once, and the same loader walked every epoch: the walk loads in the training process
            import torch
            loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True)
            sample, _ = next(iter(loader))
            for epoch in range(epochs):
                for images, labels in loader:
                    loss = model(images.cuda()).mean(); loss.backward(); optimizer.step()
            """,
            lines=(3,),
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader as DL
            train_loader = DL(train_set, batch_size=64, shuffle=True)
            """,
            lines=(2,),
            fixed="""
            from torch.utils.data import DataLoader as DL
            train_loader = DL(train_set, batch_size=64, shuffle=True, num_workers=4)
            """,
        ),
        Invalid(
            """
            from torch.utils import data
            loader = data.DataLoader(
                dataset,
                batch_size=32,
                num_workers=0,  # TODO
            )
            """,
            lines=(2,),
            fixed="""
            from torch.utils import data
            loader = data.DataLoader(
                dataset,
                batch_size=32,
                num_workers=4,  # TODO
            )
            """,
        ),
        Invalid(
            """
            import torch
            loader_kwargs = dict(batch_size=128, shuffle=True)
            loader_kwargs.update({"drop_last": True})
            train_loader = torch.utils.data.DataLoader(train_set, **loader_kwargs)
            val_loader = torch.utils.data.DataLoader(val_set, batch_size=256)
            """,
            lines=(4, 5),
            fixed="""
            import torch
            loader_kwargs = dict(batch_size=128, shuffle=True)
            loader_kwargs.update({"drop_last": True})
            train_loader = torch.utils.data.DataLoader(train_set, **loader_kwargs, num_workers=4)
            val_loader = torch.utils.data.DataLoader(val_set, batch_size=256, num_workers=4)
            """,
        ),
        Invalid(
            """
            import torch
            NUM_WORKERS = 0
            kwargs = {"batch_size": 16, "num_workers": NUM_WORKERS}
            loader = torch.utils.data.DataLoader(ds, **kwargs)
            """,
            lines=(4,),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        for call in dataloader_calls(ctx):
            workers = setting(ctx, call, "num_workers")
            if not workers.all_values(lambda v: is_zero(ctx, v, call), default_matches=True):
                continue
            if is_in_memory_dataset(ctx, call) or is_streaming_dataset(ctx, call) or _hands_out_device_tensors(ctx, call) \
                    or _indexes_held_data(ctx, call):
                continue
            if _is_one_shot(ctx, call):
                continue
            yield Report(
                call.func,
                "DataLoader loads batches in the training process (num_workers=0): set `num_workers` "
                "(start near half the physical cores) so loading overlaps compute" + resolution_note(ctx, workers.values, call),
                fix=lambda call=call, workers=workers: set_keyword_fix(
                    ctx, call, "num_workers", workers, SUGGESTED_WORKERS,
                    f"Set num_workers={SUGGESTED_WORKERS}", Applicability.UNSAFE,
                ),
            )
