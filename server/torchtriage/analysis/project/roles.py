"""Which files of a project take part in training, and which are scripts beside it.

A repository that trains also holds scripts that never do: inference and
prediction (``predict.py``, ``detect.py``), export, benchmarks, plotting.  Their
loops over images or prompts are not training steps, and the findings the
per-step rules make there are not costs of training.  So, in a project where
some file trains (runs ``backward()``, steps an optimizer, or defines a
Lightning ``training_step``):

* a *driver* is a file that trains, or imports (through the project's imports,
  transitively) a file that does: ``main.py`` calling ``engine.train_one_epoch``,
  ``engine.py`` whose loss scaler in ``util/misc.py`` runs ``backward()``;
* a *participant* is a driver, or a file a driver imports, transitively:
  ``val.py`` that ``train.py`` runs every epoch, the model, losses, data code;
* every other file is *auxiliary*: its own loops are not step loops;
* so is a script named for inference, export or benchmarking (``predict.py``,
  ``detect.py``, ``inference.py``, ``export.py``, ``benchmark.py``, ``demo.py``...)
  that does not train itself and that no participant imports, though it is a
  driver by its imports: ``detect.py`` imports ``utils/torch_utils.py``, whose
  benchmark helper runs ``backward()``, and still never trains.

A project where no file trains (an inference-only repository, one file on its
own) has no auxiliary files: its loops are judged as before.  Test files are
neither drivers nor participants.  Nothing is executed.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePath

from ..hotloops.step_markers import is_backward_call, is_optimizer_step, is_scaler_step
from .modules import ModuleTable, ProjectModule

AUXILIARY = "neither trains nor is used by the files that train"
AUXILIARY_SCRIPT = "a script for inference, export or benchmarking that does not train and that no training file imports"
SCRIPT_WORDS = ("predict", "infer", "inference", "detect", "export", "benchmark", "bench", "demo", "generate", "sample", "chat",
                "visualize", "plot")  # the first word of such a script's file name


def trains(module: ProjectModule) -> bool:
    """Whether the file runs backward, steps an optimizer (also through a loss scaler handed it: ``loss_scaler(loss,
    optimizer)``) or defines a Lightning ``training_step``."""
    ctx = module.ctx
    if ctx is None:
        return False
    if any(ctx.is_method(f) for f in ctx.functions.get("training_step", ())):
        return True
    if "backward" not in ctx.source and ".step(" not in ctx.source and "scaler(" not in ctx.source.lower():
        return False  # a cheap first cut: no marker can be there
    return any(is_backward_call(call) or is_optimizer_step(call) or is_scaler_step(call) for call in ctx.nodes_of(ast.Call))


def auxiliary_modules(table: ModuleTable, train_elsewhere: frozenset[ProjectModule] = frozenset()) -> dict[ProjectModule, str]:
    """The project's auxiliary files (see the module doc), each with the reason.

    ``train_elsewhere``: files a loop of which runs another file's training step (``model.optimize_parameters()``
    on a model built by a registry, whose files no import names): they train, though by their own code and
    their imports they would not."""
    live = [m for m in table.by_path.values() if m.ctx is not None and not m.is_test]
    training = {m for m in live if trains(m) or m in train_elsewhere}
    if not training:
        return {}
    imports = {m: [o for o in table.imported(m) if o.ctx is not None and not o.is_test] for m in live}
    importers: dict[ProjectModule, list[ProjectModule]] = {m: [] for m in live}
    for module, imported in imports.items():
        for other in imported:
            importers.setdefault(other, []).append(module)
    drivers = _closure(training, importers)  # training files and what imports them
    scripts = {m for m in drivers - training if _script_name(m) and not importers.get(m)}
    participants = _closure(drivers - scripts, imports)  # the drivers and what they import
    out = {m: AUXILIARY for m in live if m not in participants and m not in scripts}
    out.update({m: AUXILIARY_SCRIPT for m in scripts if m not in participants})
    return out


def imported_modules(table: ModuleTable) -> set[ProjectModule]:
    """The files another (non-test) file of the project imports: library files, whose
    ``if __name__ == "__main__":`` block is a self-test or demo, not the training run."""
    live = [m for m in table.by_path.values() if m.ctx is not None and not m.is_test]
    return {other for m in live for other in table.imported(m) if other.ctx is not None}


def _script_name(module: ProjectModule) -> bool:
    """A file named for inference, export or benchmarking: its name's first word is one of ``SCRIPT_WORDS``."""
    stem = PurePath(module.path).stem.lower()
    first = re.split(r"[_\-.]", stem, maxsplit=1)[0]
    return first.rstrip("s") in SCRIPT_WORDS or first in SCRIPT_WORDS


def _closure(start: set[ProjectModule], edges: dict[ProjectModule, list[ProjectModule]]) -> set[ProjectModule]:
    seen = set(start)
    stack = list(start)
    while stack:
        for other in edges.get(stack.pop(), ()):
            if other not in seen:
                seen.add(other)
                stack.append(other)
    return seen
