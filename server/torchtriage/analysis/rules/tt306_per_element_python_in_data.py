"""TT306: a Python loop or comprehension walks a tensor's elements or pixels in data code."""

from __future__ import annotations

import ast
from typing import Iterator

from ...findings import Severity
from ._tt306_arrays import Arrays
from ._tt306_datacode import data_functions
from ._tt306_element_loops import ElementLoops
from .base import Invalid, Report, Rule, RuleContext, Valid

_QUOTE = 40


def _quote(ctx: RuleContext, node: ast.AST) -> str:
    text = " ".join(ctx.segment(node).split())
    return text if len(text) <= _QUOTE else text[: _QUOTE - 3] + "..."


class PerElementPythonInData(Rule):
    code = "TT306"
    name = "per-element-python-in-data"
    severity = Severity.WARNING
    category = "data_loading"
    requires_cuda = False
    summary = (
        "A Python loop or comprehension walks a tensor's elements or pixels in data code "
        "(`Dataset.__getitem__`, a `collate_fn`, a transform)."
    )
    why = """
        Data code runs once for every sample of every epoch, so a Python loop
        over the elements of a tensor, an array or an image pays the
        interpreter (and, for tensors, an indexing call and a 0-d tensor) per
        element: walking one 64×64 channel pixel by pixel with tensor indexing
        took about 50 ms on one CPU core, the same scaling on the whole channel
        about 8 µs. Workers only split that cost across processes. It is the
        classic way to starve the accelerator: data loading is the most common
        bottleneck in first profiles (20-30 % of teams are loader bound, with
        the device idle 30-50 % of every step), and guides list moving
        per-sample transforms to tensor ops (or to the GPU) among its first
        fixes. Loops over the list of samples in a collate function, over
        files, keys or dict items, a fixed number of times (`range(10)`
        attempts, `zip(t, mean, std)` channels), and code outside data code
        are not flagged; nor are the sample loops of an `__iter__` (the ones
        that `yield`) or what it runs before them.
    """
    fix_description = """
        Replace the loop by operations on the whole tensor: arithmetic and
        casts (`img * 0.9`, `t.float()`), masks and `torch.where` for
        conditions, `clamp`, `t.mean()` / `t.std()`, indexing with index
        tensors; convert a tensor to a list once (`t.tolist()`) if Python
        values are really needed. No automatic fix: the vectorised form depends
        on what the loop computes, and even `[float(v) for v in t]` is not
        `t.tolist()` for every tensor (it fails on 2-D ones; an integer
        tensor's `tolist()` gives ints).
    """
    example_bad = """
        class Pixels(Dataset):
            def __getitem__(self, index):
                img = self.images[index].clone()
                _, h, w = img.shape
                for y in range(h):
                    for x in range(w):
                        img[0, y, x] = img[0, y, x] * 0.9
                row = [float(v) for v in self.features[index]]
                return img, torch.tensor([(v - 0.5) * 2 for v in row])
    """
    example_good = """
        class Pixels(Dataset):
            def __getitem__(self, index):
                img = self.images[index].clone()
                img[0] *= 0.9
                return img, (self.features[index].float() - 0.5) * 2
    """
    VALID = (
        Valid(
            """
            # a collate that sorts its samples by length: numpy over one value per sample, then sample loops
            import numpy as np
            import torch
            from torch.utils.data import DataLoader

            def collate(batch):
                lengths = [b[0].shape[1] for b in batch]
                order = np.argsort(lengths)[::-1]
                batch = [batch[i] for i in order]
                longest = max([b[0].shape[1] for b in batch])
                mels = torch.zeros(len(batch), 80, longest)
                for i, (mel, text) in enumerate(batch):
                    mels[i, :, : mel.shape[1]] = mel
                return mels

            loader = DataLoader(dataset, batch_size=16, collate_fn=collate, num_workers=4)
            """
        ),
        Valid(
            """
            # a dataset of one input array or several: under isinstance(..., list) the comprehension walks the inputs
            from typing import List, Optional, Union

            import numpy as np
            from torch.utils.data import Dataset

            class MultiInput(Dataset):
                def __init__(self, X: Optional[Union[np.ndarray, List[np.ndarray]]] = None, y: Optional[np.ndarray] = None):
                    self.X = X
                    self.y = y

                def __len__(self):
                    return len(self.y)

                def __getitem__(self, idx: int):
                    x = {}
                    if self.X is not None:
                        if isinstance(self.X, list):
                            x["tab"] = [self.X[i][idx] for i in range(len(self.X))]
                        else:
                            x["tab"] = self.X[idx]
                    return x, self.y[idx]
            """
        ),
        Valid(
            """
            # once per joint: a count the dataset is configured with (17), not the size of a sample
            import numpy as np
            from torch.utils.data import Dataset

            class Keypoints(Dataset):
                def __getitem__(self, index):
                    joints = self.joints[index]
                    target = np.zeros((self.num_joints, 64, 48), dtype=np.float32)
                    for joint_id in range(self.num_joints):
                        x, y = joints[joint_id]
                        target[joint_id, int(y), int(x)] = 1
                    return target
            """
        ),
        Valid(
            """
            # once per annotated object, at most max_objs of them: a count caps min(), whatever the other bound is
            import numpy as np
            from torch.utils.data import Dataset

            class Boxes(Dataset):
                def __getitem__(self, index):
                    anns = self.coco.loadAnns(ids=self.ids[index])
                    num_objs = min(len(anns), self.max_objs)
                    wh = np.zeros((self.max_objs, 2), dtype=np.float32)
                    for k in range(num_objs):
                        wh[k] = anns[k]["bbox"][2:]
                    return wh
            """
        ),
        Valid(
            """
            # vectorised: whole-tensor arithmetic and casts
            import torch
            from torch.utils.data import Dataset

            class Vignette(Dataset):
                def __init__(self, n):
                    self.images = torch.rand(n, 3, 48, 48)
                    self.features = torch.randn(n, 12)

                def __getitem__(self, index):
                    img = self.images[index] * 0.9
                    return img, self.features[index].float()
            """
        ),
        Valid(
            """
            # collate: loops over the list of samples, then torch.stack
            import torch
            from torch.utils.data import DataLoader

            def pad_collate(batch):
                lengths = [len(seq) for seq, _ in batch]
                padded = torch.zeros(len(batch), max(lengths))
                for i, (seq, _) in enumerate(batch):
                    padded[i, : len(seq)] = seq
                for i in range(len(batch)):
                    padded[i, 0] = batch[i][0][0]
                labels = torch.tensor([label for _, label in batch])
                return padded, torch.stack([s[0][:1] for s in batch]), labels

            loader = DataLoader(dataset, batch_size=32, num_workers=4, collate_fn=pad_collate)
            """
        ),
        Valid(
            """
            # a collate taking one whole column per feature: each iteration is one tensor op, not one element
            import torch
            from torch.utils.data import DataLoader

            def collate_columns(samples):
                dense = torch.tensor([s[0] for s in samples], dtype=torch.float)
                sparse = torch.tensor([s[1] for s in samples], dtype=torch.long)
                n_features = sparse.shape[1]
                columns = [sparse[:, f] for f in range(n_features)]
                offsets = [torch.arange(sparse.shape[0]) for _ in range(n_features)]
                return dense, torch.stack(offsets), torch.stack(columns)

            loader = DataLoader(clicks, batch_size=128, num_workers=4, collate_fn=collate_columns)
            """
        ),
        Valid(
            """
            # loops over dict items, files and keys
            import json
            import torch
            from torch.utils.data import Dataset

            class Captions(Dataset):
                def __init__(self, index_file, encodings):
                    self.records = json.load(open(index_file))
                    self.encodings = encodings
                    self.labels = torch.tensor([r["label"] for r in self.records])

                def __getitem__(self, idx):
                    item = {key: value[idx] for key, value in self.encodings.items()}
                    for path in self.records[idx]["files"]:
                        item.setdefault("paths", []).append(path)
                    for key in sorted(item):
                        item[key] = item[key]
                    item["label"] = self.labels[idx]
                    return item
            """
        ),
        Valid(
            """
            # not data code: training loops are other rules' business
            import torch

            def summarize(t):
                return [float(v) for v in t]

            for step, (x, y) in enumerate(loader):
                loss = model(x, y)
                loss.backward()
                optimizer.step()
                for v in loss.detach().flatten().tolist():
                    history.append(v)
            """
        ),
        Valid(
            """
            # the sample loops of __iter__ (one pass per sample is their job), over an index order
            import torch
            from torch.utils.data import IterableDataset

            class Stream(IterableDataset):
                def __init__(self, n):
                    self.data = torch.randn(n, 8)

                def __iter__(self):
                    for i in torch.randperm(len(self.data)).tolist():
                        yield self.data[i]
                    for row in self.data:
                        yield row * 2
            """
        ),
        Valid(
            """
            # a loop over three channels (zip with a list), ten crop attempts, a tuple of crops
            import random
            import torch
            from torchvision import transforms

            class ChannelNormalize:
                def __init__(self, mean, std):
                    self.mean, self.std = mean, std

                def __call__(self, tensor):
                    for t, m, s in zip(tensor, self.mean, self.std):
                        t.sub_(m).div_(s)
                    return tensor

            class RandomSquareCrop:
                def __call__(self, img):
                    for attempt in range(10):
                        side = random.randint(8, 32)
                        if side <= min(img.size):
                            return img.crop((0, 0, side, side))
                    return img

            tfm = transforms.Compose([
                transforms.TenCrop(24),
                transforms.Lambda(lambda crops: torch.stack([transforms.ToTensor()(c) for c in crops])),
                ChannelNormalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2]),
                RandomSquareCrop(),
            ])
            """
        ),
        Valid(
            """
            # dict samples and per-sample targets
            import torch
            from torchvision import transforms

            class PairedFlip:
                def __call__(self, sample):
                    image, mask = sample["image"], sample["mask"]
                    for key in sample:
                        sample[key] = sample[key].flip(-1)
                    return sample

            def detection_collate(batch):
                images = [img for img, _ in batch]
                targets = [{k: v for k, v in t.items()} for _, t in batch]
                return torch.stack(images), targets

            tfm = transforms.Compose([PairedFlip()])
            """
        ),
    )
    INVALID = (
        Invalid(
            """
            # the distinct labels are few (a check per label is fine); the lookup walks every pixel
            import numpy as np
            from torch.utils.data import Dataset

            class Labels(Dataset):
                def __getitem__(self, index):
                    mask = np.array(self.masks[index])
                    values = np.unique(mask)
                    for value in values:
                        assert value in self.mapping
                    out = np.zeros_like(mask)
                    for i, value in enumerate(mask.ravel()):
                        out.flat[i] = self.lut[value]
                    return out
            """,
            lines=(12,),
        ),
        Invalid(
            """
            # nested pixel loops in __getitem__: one finding, on the outer loop
            import torch
            from torch.utils.data import Dataset

            class Vignette(Dataset):
                def __init__(self, n):
                    self.images = torch.rand(n, 3, 48, 48)

                def __getitem__(self, index):
                    img = self.images[index].clone()
                    _, h, w = img.shape
                    for y in range(h):
                        for x in range(w):
                            img[0, y, x] = img[0, y, x] * 0.9
                    return img
            """,
            findings=(
                ("12:9-12:26", "per-element Python in `Vignette.__getitem__`: `for y in range(h)`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # a comprehension over a tensor row, then over the list it made
            import torch
            from torch.utils import data

            class Tabular(data.Dataset):
                def __init__(self, table):
                    self.features = torch.from_numpy(table).float()

                def __getitem__(self, index):
                    row = [float(v) for v in self.features[index]]
                    low, high = min(row), max(row)
                    return torch.tensor([(v - low) / (high - low) for v in row])
            """,
            findings=(
                ("10:15-10:55", "per-element Python in `Tabular.__getitem__`: `for v in self.features[index]`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
                ("12:29-12:68", "per-element Python in `Tabular.__getitem__`: `for v in row`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # a .tolist() comprehension in a transform class used in Compose
            import torch
            from torchvision import transforms as T

            class Quantize:
                def __init__(self, levels):
                    self.levels = levels

                def __call__(self, t):
                    return torch.tensor([round(v * self.levels) / self.levels for v in t.tolist()])

            pipeline = T.Compose([T.ToTensor(), Quantize(16)])
            """,
            findings=(
                ("10:29-10:87", "per-element Python in transform `Quantize.__call__`: `for v in t.tolist()`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # a collate_fn walking a stacked tensor element by element
            import torch
            from torch.utils.data import DataLoader

            def smooth_labels(samples):
                images = torch.stack([img for img, _ in samples])
                targets = torch.stack([t for _, t in samples]).float()
                for i in range(targets.size(0)):
                    for j in range(targets.size(1)):
                        targets[i, j] = targets[i, j] * 0.9 + 0.05
                return images, targets

            loader = DataLoader(train_set, batch_size=64, num_workers=4, collate_fn=smooth_labels)
            """,
            findings=(
                ("8:5-8:36", "per-element Python in collate function `smooth_labels`: `for i in range(targets.size(0))`"
                 " runs once per element of every batch: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # PIL pixel access in a helper that __getitem__ calls
            import numpy as np
            from PIL import Image
            from torch.utils.data import DataLoader, Dataset

            class Scans(Dataset):
                def __init__(self, paths):
                    self.paths = paths

                def __getitem__(self, i):
                    img = Image.open(self.paths[i]).convert("L")
                    return self.threshold(img)

                def threshold(self, img):
                    pixels = img.load()
                    width, height = img.size
                    for px in range(width):
                        for py in range(height):
                            pixels[px, py] = 255 if pixels[px, py] > 128 else 0
                    return np.asarray(img)
            """,
            findings=(
                ("17:9-17:31", "per-element Python in `threshold` (called from `Scans.__getitem__`): "
                 "`for px in range(width)` runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # per-element work inside the sample loop of an IterableDataset
            import numpy as np
            import torch
            from torch.utils.data import IterableDataset

            class TokenShards(IterableDataset):
                def __init__(self, files):
                    self.files = files

                def __iter__(self):
                    order = torch.randperm(len(self.files)).tolist()
                    for k in order:
                        shard = np.load(self.files[k])
                        for window in shard:
                            ids = [int(v) for v in window]
                            yield torch.tensor(ids)
            """,
            findings=(
                ("15:23-15:47", "per-element Python in `TokenShards.__iter__`: `for v in window`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
        Invalid(
            """
            # a transform function: `for i in range(len(t)): t[i] = ...`
            from torchvision import datasets

            def clip_outliers(t):
                for i in range(len(t)):
                    t[i] = min(t[i], 3.0)
                return t

            train = datasets.MNIST("data", train=True, transform=clip_outliers)
            """,
            findings=(
                ("5:5-5:27", "per-element Python in transform `clip_outliers`: `for i in range(len(t))`"
                 " runs once per element of every sample: use whole-tensor ops instead"),
            ),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Report]:
        functions = data_functions(ctx)
        if not functions:
            return
        arrays = Arrays(ctx)
        for function in functions:
            arrays.never[id(function.node)] = function.container_params
            if function.sample:
                arrays.samples[id(function.node)] = function.sample
        walker = ElementLoops(ctx, arrays)
        reported: set[int] = set()
        for function in functions:
            for _, anchor, iterable, target in walker.find(function.scanned, reported):
                yield Report(
                    anchor,
                    f"per-element Python in {function.where}: `for {_quote(ctx, target)} in {_quote(ctx, iterable)}` "
                    f"runs once per element of every {'batch' if function.kind == 'collate' else 'sample'}: "
                    "use whole-tensor ops instead",
                )
