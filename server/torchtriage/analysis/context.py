"""Everything a rule may ask about one module: its syntax index, the settings, the device, the hot loops.

Built once per analysed source by the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ..config import Settings
from .hotloops import HotLoops, find_hot_loops
from .module_index import ModuleIndex

_CUDA_PATTERNS = re.compile(
    r"""\.cuda\s*\(|["']cuda(?::\d+)?["']|torch\.accelerator|cuda\.is_available\s*\(|\.to\s*\(\s*["']cuda"""
)


@dataclass
class ModuleContext(ModuleIndex):
    """A module's syntax index plus what rules need beyond syntax: settings, device and hot loops."""

    settings: Settings = field(default_factory=Settings)

    @cached_property
    def uses_cuda(self) -> bool:
        """Whether CUDA-only rules apply: by setting, or when the file mentions CUDA."""
        if self.settings.device == "cuda":
            return True
        if self.settings.device == "cpu":
            return False
        return bool(_CUDA_PATTERNS.search(self.source))

    @cached_property
    def hot(self) -> HotLoops:
        """The step loops and per-step functions of this module."""
        return find_hot_loops(self)
