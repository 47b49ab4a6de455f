"""Everything a rule may ask about one module: its syntax index, the settings, the device, the hot loops.

Built once per analysed source, with what the rest of its project tells it, and not
changed afterwards: by the engine (from a :class:`.project_view.ProjectView`, see
:meth:`ModuleContext.from_view`) or by the project model once it has solved the
project (:mod:`.project`).  Rules see it through :class:`.rules.base.RuleContext`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import InitVar, dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from ..config import Settings
from .defaults import Default, file_defaults, unique
from .hotloops.finder import HotEntry, HotLoops, find_hot_loops
from .incremental.memo import keyed_memo
from .module_index import ModuleIndex
from .project_view import LoaderRead, ProjectView, ReturnedLoader, context_facts

if TYPE_CHECKING:
    from .incremental.reparse import ParsedModule

_CUDA_PATTERNS = re.compile(
    r"""\.cuda\s*\(|["']cuda(?::\d+)?["']|torch\.accelerator|cuda\.is_available\s*\(|\.to\s*\(\s*["']cuda"""
    r"""|["']cuda:(?:\{[^}'"]*\}|%d)["']"""  # "cuda:{}".format(rank), f"cuda:{local_rank}", "cuda:%d" % rank
    r"""|["']cuda:["']\s*\+"""  # "cuda:" + str(args.gpu)
    r"""|torch\.backends\.cuda\.matmul\.|torch\.cuda\.set_device\s*\("""  # TF32 for CUDA matmuls; DDP's device by rank
)
_LIGHTNING_GPUS = re.compile(r"""\bgpus\s*=(?!=)|\baccelerator\s*=\s*["'](?:gpu|cuda)["']""")  # Trainer(gpus=...), accelerator="gpu"


@lru_cache(maxsize=256)
def _interned(key: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return key


@dataclass
class ModuleContext(ModuleIndex):
    """A module's syntax index plus what rules need beyond syntax: settings, device and hot loops."""

    settings: Settings = field(default_factory=Settings)
    # What the rest of the project tells this file, given when the context is built (by the
    # project model, :mod:`.project`, or from a view, :meth:`from_view`) and never set later:
    # functions other files call once per step, and the project file whose CUDA use reaches
    # this module through its imports.
    hot_entries: tuple[HotEntry, ...] = field(default=(), repr=False, compare=False)
    cuda_from: str | None = field(default=None, repr=False, compare=False)
    path_label: str | None = field(default=None, repr=False, compare=False)  # how call paths name this file
    # Loaders of this file that step loops of other project files iterate (see :mod:`.project`).
    loader_reads: tuple[LoaderRead, ...] = field(default=(), repr=False, compare=False)
    # The training step loop of another project file this file calls (``train_one_epoch(...)``).
    trains_via: str | None = field(default=None, repr=False, compare=False)
    # Attribute defaults (argparse, config classes) of every project file, and the constants
    # this file imports from project files (see :mod:`.defaults`).
    project_defaults: dict[str, list[Default]] | None = field(default=None, repr=False, compare=False)
    imported_constants: dict[str, Default] = field(default_factory=dict, repr=False, compare=False)
    # "dist_util.py:45": a project device function (``dev()``, returning a CUDA device) this file
    # calls, so it uses CUDA itself though its text never says "cuda".
    device_call: str | None = field(default=None, repr=False, compare=False)
    # Why this file's own loops are not step loops: a script beside the project's training code
    # that neither trains nor is used by it (see :mod:`.project.roles`); None: they are judged.
    auxiliary: str | None = field(default=None, repr=False, compare=False)
    # Other project files import this one: its ``if __name__ == "__main__":`` block is a self-test or demo.
    imported: bool = field(default=False, repr=False, compare=False)
    # Loaders this file's factories return that a caller iterates in a step loop every epoch.
    returned_loaders: tuple[ReturnedLoader, ...] = field(default=(), repr=False, compare=False)
    # Names this file imports that are project subclasses of torch's DataLoader (``DataLoaderX``).
    loader_classes: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # Lines of this file's step loops that train through another file's function (``policy.train(buffer)``).
    training_loops: frozenset[int] = field(default=frozenset(), repr=False, compare=False)
    # Names of this file's functions that a training file calls (``get_optimizer(cfg, model)``).
    trainer_calls: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # A file using CUDA whose training step a loop of this file runs (``policy.train(buffer)``): it trains on CUDA.
    steps_on_cuda_in: str | None = field(default=None, repr=False, compare=False)
    # A file using CUDA whose step loop calls this file's code every step, though it does not import it
    # (a model module picked by ``importlib.import_module(args.model)``): this file runs on CUDA too.
    cuda_caller: str | None = field(default=None, repr=False, compare=False)
    # Names this file imports of other project files' functions whose own body waits for the device
    # (``evaluate_network`` returning ``loss.item()`` sums): a call of one synchronises (TT402).
    syncing_imports: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # Lines of this file's loops that run one training step per pass through another file's function
    # though nothing in this file says so (``step_vals = algorithm.update(minibatches)``): step loops.
    step_loops: frozenset[int] = field(default=frozenset(), repr=False, compare=False)
    # Names of this file's classes and functions that another file's forward code builds or calls
    # (``TriangularCausalMask(B, L, device=x.device)`` in an attention layer's ``forward``, whose
    # ``__init__`` runs every pass; ``timestep_embedding(t, dim)``): forward code here too.
    forward_reached: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # Names this file imports that are project subclasses of torch's IterableDataset (``CombinedDataset``).
    iterable_datasets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # Names of other project files' functions this file's per-step code hands step data to and that copy
    # it to a device (``model.set_input(images, labels)`` doing ``x.cuda()``; :mod:`.project.batch_movers`).
    batch_movers: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # A project file that imports this one and chooses the precision (FSDP's ``MixedPrecision``, an AMP flag):
    # the loops here run the model it built (:mod:`.project.precision`).
    precision_from: str | None = field(default=None, repr=False, compare=False)
    # Names of this file's functions the project runs once, outside every loop (a final ``evaluate(test_loader,
    # model)`` after training): their evaluation loops are one pass, not step loops (:mod:`.project.run_once`).
    run_once: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # A file using CUDA whose step loop copies the batches of this file's loaders to the device (the loader is
    # handed to its function or class, or returned to a caller that does): this file's loaders feed CUDA.
    loaders_on_cuda_in: str | None = field(default=None, repr=False, compare=False)
    # The hot loops for ``hot_entries`` when whoever builds the context has them already (the
    # project model computes them while solving); else :attr:`hot` finds them on first use.
    hot_loops: InitVar[HotLoops | None] = None

    def __post_init__(self, hot_loops: HotLoops | None) -> None:
        if hot_loops is not None:
            self.__dict__["hot"] = hot_loops  # what the cached property would compute

    @classmethod
    def from_view(
        cls, parsed: "ParsedModule", path: str, settings: Settings, view: ProjectView | None = None
    ) -> "ModuleContext":
        """The context of a parsed module, with what the rest of its project tells it (``view``,
        by name: see :mod:`.project_view`) found again in this parse."""
        facts = {}
        if view is not None:
            facts = context_facts(view, ModuleIndex(source=parsed.source, tree=parsed.tree, path=path, parsed=parsed))
        return cls(source=parsed.source, tree=parsed.tree, path=path, settings=settings, parsed=parsed, **facts)

    @cached_property
    def own_defaults(self) -> tuple[dict[str, list[Default]], dict[str, list[Default]]]:
        return file_defaults(self)

    def attribute_default(self, attr: str) -> Default | None:
        """What ``args.<attr>`` / ``cfg.<attr>`` holds by default, from this file or the project."""
        own = self.own_defaults[0].get(attr)
        if own:  # this file's parser or config class decides what its ``args.x`` holds
            return unique(own)
        return unique(self.project_defaults.get(attr)) if self.project_defaults is not None else None

    def constant_default(self, name: str) -> Default | None:
        """A module constant of this file, or one it imports from a project file."""
        return unique(self.own_defaults[1].get(name)) or self.imported_constants.get(name)

    @cached_property
    def aliases_key(self) -> tuple[tuple[str, str], ...]:
        """The module's imports as a hashable key: part of the key of any result kept on a node
        (see :mod:`.memo`) that resolves names through the imports (``ctx.qualname``).  Equal
        imports give the same object from one analysis to the next, so keys compare by identity."""
        return _interned(tuple(sorted(self.aliases.items())))

    def qualname(self, node: ast.AST) -> str | None:
        """Dotted name with the first part resolved through the module's imports (kept on the
        node while the imports stay the same: it depends on nothing else)."""
        try:
            return self._qualnames[node]  # asked again and again within one analysis
        except KeyError:
            value = self._qualnames[node] = keyed_memo(
                node, "qualname", self.aliases_key, lambda: self._resolve_qualname(node)
            )
            return value

    @cached_property
    def mentions_cuda(self) -> bool:
        """Whether the file itself uses CUDA (``.cuda()``, ``"cuda"``, ``torch.accelerator``, Lightning's
        ``Trainer(gpus=...)`` ..., or a call of a project device function: ``device_call``)."""
        if self.device_call is not None:
            return True
        if ("cuda" in self.source or "torch.accelerator" in self.source) and _CUDA_PATTERNS.search(self.source):
            return True  # every pattern holds one of the two words: a substring test first is ten times faster
        return ("gpus" in self.source or "accelerator" in self.source) and bool(_LIGHTNING_GPUS.search(self.source))

    @cached_property
    def uses_cuda(self) -> bool:
        """Whether CUDA-only rules apply: by setting, when the file mentions CUDA, or when a
        project file that imports it does."""
        if self.settings.device == "cuda":
            return True
        if self.settings.device == "cpu":
            return False
        return (self.mentions_cuda or self.cuda_from is not None or self.steps_on_cuda_in is not None or self.cuda_caller is not None
                or self.loaders_on_cuda_in is not None)

    @cached_property
    def hot(self) -> HotLoops:
        """The step loops and per-step functions of this module."""
        return find_hot_loops(self, self.hot_entries, own_loops=self.auxiliary is None, main_block=not self.imported,
                              step_loops=self.step_loops, run_once=self.run_once)

    @cached_property
    def own_hot(self) -> HotLoops:
        """The module's loops and per-step functions as if it took part in training: ``hot`` itself
        unless the module is a script beside the training code (``auxiliary``)."""
        if self.auxiliary is None:
            return self.hot
        return find_hot_loops(self, self.hot_entries, own_loops=True, main_block=not self.imported, step_loops=self.step_loops)
