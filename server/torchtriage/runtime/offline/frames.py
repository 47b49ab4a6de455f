"""Python frames as a trace names them, and which of them are the user's code.

torch names a ``python_function`` event ``path(LINE): function`` for a Python
frame and ``<built-in method NAME of ...>`` for a C call.  ``path`` is shortened:
the longest ``sys.path`` / site-packages prefix of the recording machine is cut
(``torch/nn/modules/module.py``, ``typing.py``, and the script itself when it was
run from its own folder: ``train.py``); ``LINE`` is the line the frame was on
when the event began, which is the ``def`` line for a call made while the
profiler ran (docs in ``callsites``).

``CodeMap`` decides, with no access to the recording machine, which files are
library code: anything under site-packages / dist-packages or a ``lib/pythonX.Y``
folder, this interpreter's own library folders, and shortened paths whose first
part is a standard-library module or a package installed here (or a common ML
library).  Everything else is the user's.  It also finds a file on this machine:
first a path starting with the ``FROM`` of a ``--path-map FROM=TO`` (``path_map``;
the longest ``FROM`` that matches whole folder names) is rewritten to start with
``TO``; then an absolute path that exists as it is; else the path, or its longest
tail that does, under the folders given (``roots``), the trace's folder or the
current folder (a trace from ``/workspace/proj`` read in a checkout of ``proj``);
else the name stays as the trace wrote it.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
_BUILTIN = re.compile(r"^<built-in (?:method|function) (\w*)")
MODULE_CALL = "nn.Module: "  # torch's event for a module's __call__ ("nn.Module: Linear_0")
_LIBRARY_PARTS = ("/site-packages/", "/dist-packages/", "/torchtriage/runtime/agent/")
_PYTHON_LIB = re.compile(r"/lib(?:64)?/python\d+(?:\.\d+)?/")
# packages often met in training traces, library code even where this machine lacks them
KNOWN_LIBRARIES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "functorch", "triton", "numpy", "transformers", "accelerate",
    "datasets", "deepspeed", "lightning", "pytorch_lightning", "timm", "tqdm", "apex", "fairscale", "megatron",
    "tensorboard", "wandb", "PIL", "scipy", "pandas", "sklearn", "einops", "safetensors", "huggingface_hub",
    "tokenizers", "peft", "xformers", "flash_attn", "torchmetrics", "hydra", "omegaconf", "mlflow",
})


class Frame(NamedTuple):
    """A parsed ``python_function`` name: ``path`` "" for a C call (``function`` is then the C function's name)."""

    path: str
    line: int
    function: str


def parse_frame(name: str) -> Frame:
    match = _FRAME.match(name)
    if match:
        return Frame(match.group(1), int(match.group(2)), match.group(3))
    builtin = _BUILTIN.match(name)
    return Frame("", 0, builtin.group(1) if builtin else name)


def _installed_top_levels() -> frozenset[str]:
    """Standard-library and builtin modules, what this interpreter's site folders hold at their top level
    (packages, modules, extension modules: one directory listing each, not every distribution's
    metadata), and :data:`KNOWN_LIBRARIES`."""
    names = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    for folder in _site_folders():
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if entry.endswith((".dist-info", ".egg-info", ".pth")) or entry.startswith("."):
                continue
            name = entry.split(".", 1)[0]
            if name.isidentifier():
                names.add(name)
    return frozenset(names) | KNOWN_LIBRARIES


def _site_folders() -> set[str]:
    folders = {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    for key in ("purelib", "platlib"):
        folders.add(sysconfig.get_paths().get(key, ""))
    return {f for f in folders if f and os.path.isdir(f)}


def _library_prefixes() -> tuple[str, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    return tuple(sorted({os.path.realpath(p).rstrip(os.sep) + os.sep for p in paths if p}, key=len, reverse=True))


class CodeMap:
    """User or library code, and where a trace's file is on this machine (each answer cached)."""

    def __init__(self, trace_dir: Path, cwd: Optional[Path] = None, roots: Sequence[Path] = (),
                 path_map: Sequence[tuple[str, str]] = ()) -> None:
        self.bases = [Path(r) for r in roots] + [Path(trace_dir), Path(cwd or Path.cwd())]
        self.path_map = sorted(((_unix(a).rstrip("/"), os.path.abspath(os.path.expanduser(b))) for a, b in path_map if a),
                               key=lambda m: -len(m[0]))
        self._tops: Optional[frozenset[str]] = None  # read when a shortened path is first met
        self._prefixes = _library_prefixes()
        self._user: dict[str, bool] = {}
        self._local: dict[str, str] = {}
        self.missing: set[str] = set()  # user files not found on this machine

    def _under_bases(self, path: str) -> Optional[str]:
        """A relative name under one of the bases; an absolute one from another machine by its longest
        suffix that is a file under one (``/workspace/proj/src/train.py`` -> ``<base>/src/train.py``)."""
        parts = Path(path).parts
        suffixes = [Path(*parts[i:]) for i in range(1 if os.path.isabs(path) else 0, len(parts))]
        for suffix in suffixes:
            for base in self.bases:
                candidate = base / suffix
                if candidate.is_file():
                    return str(candidate.resolve())
        return None

    def is_user(self, path: str) -> bool:
        known = self._user.get(path)
        if known is None:
            known = self._user[path] = self._classify(path)
        return known

    def _classify(self, path: str) -> bool:
        if not path or path.startswith("<"):
            return False
        unix = path.replace("\\", "/")
        if any(part in unix for part in _LIBRARY_PARTS) or _PYTHON_LIB.search(unix):
            return False
        if os.path.isabs(path) or re.match(r"^[A-Za-z]:/", unix):
            real = os.path.realpath(path)
            return not any(real.startswith(prefix) for prefix in self._prefixes)
        first = unix.split("/", 1)[0]
        module = first[:-3] if first.endswith(".py") else first
        if self._tops is None:
            self._tops = _installed_top_levels()
        return module not in self._tops

    def local(self, path: str) -> str:
        """The file's absolute path here when it is found, else ``path`` as the trace wrote it."""
        known = self._local.get(path)
        if known is not None:
            return known
        found = mapped = self._mapped(path)
        if path and not path.startswith("<") and not (os.path.isabs(mapped) and os.path.isfile(mapped)):
            found = self._under_bases(mapped)
            if found is None:
                found = path
                self.missing.add(path)
        self._local[path] = found
        return found

    def _mapped(self, path: str) -> str:
        """``path`` with the longest matching ``--path-map`` prefix replaced (``path`` itself when none matches)."""
        unix = _unix(path)
        for source, target in self.path_map:
            if unix == source or unix.startswith(source + "/") or not source:
                rest = unix[len(source):].lstrip("/")
                return str(Path(target) / rest) if rest else target
        return path


def _unix(path: str) -> str:
    return path.replace("\\", "/")


def code_kind(path: str, function: str) -> str:
    """The context a library frame sets, as the agent's ``_code_kind`` decides it (paths here may be shortened):
    "loader" | "profiler" | "optimizer" | "compile" | ""."""
    unix = "/" + path.replace("\\", "/").lstrip("/")
    agent = "/torchtriage/runtime/agent/" in unix
    if function == "__next__" and (unix.endswith("/torch/utils/data/dataloader.py") or agent):
        return "loader"
    if agent or "/torch/profiler/" in unix or unix.endswith("/torch/autograd/profiler.py"):
        return "profiler"
    if "/torch/optim/" in unix:
        return "optimizer"
    if unix.endswith("/torch/_dynamo/convert_frame.py"):
        return "compile"
    return ""
