"""The loss of every backward pass, for ``torchtriage fix --verify`` (a fix must not change what is learnt).

Only when the settings ask for it (``record_losses``): ``torch.autograd.backward``
(which ``Tensor.backward`` calls) is wrapped so that each scalar it starts from
is kept, detached, and read once when the run ends.  Nothing is read during the
steps, so the recorder adds no host-device sync to what is measured.  Also the
seed: ``seed`` in the settings seeds Python, NumPy (when the script could use
it) and torch before the script starts, so two runs of two versions of a script
draw the same numbers.
"""

from __future__ import annotations

import random
from typing import Any, List, Optional

import torch

MAX_LOSSES = 2000  # backward passes kept per run


def seed_everything(seed: Optional[int]) -> None:
    """Seed Python, NumPy (if installed) and torch (all devices)."""
    if seed is None:
        return
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed % 2**32)


class LossRecorder:
    """Keeps the scalar each backward pass starts from; ``values()`` reads them as floats."""

    def __init__(self) -> None:
        self._kept: List[Any] = []
        self._original: Any = None

    def install(self) -> None:
        original = self._original = torch.autograd.backward
        kept = self._kept

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
            if isinstance(first, torch.Tensor) and first.numel() == 1 and len(kept) < MAX_LOSSES:
                kept.append(first.detach())
            return original(tensors, *args, **kwargs)

        torch.autograd.backward = backward

    def uninstall(self) -> None:
        if self._original is not None:
            torch.autograd.backward = self._original
            self._original = None

    def values(self) -> List[Optional[float]]:
        """Every kept loss as a float (None for one that cannot be read, such as a NaN kept as NaN)."""
        out: List[Optional[float]] = []
        for tensor in self._kept:
            try:
                value = float(tensor.float().cpu().item())
            except Exception:
                value = None
            out.append(value if value is not None and value == value and abs(value) != float("inf") else None)
        return out
