"""The loss, read where ``backward()`` is called; under fp16, a GradScaler injected there.

``torch.autograd.backward`` (which ``Tensor.backward`` calls) is wrapped: the
last scalar it is called on is kept, detached and on its device (no sync), so
the lab can read each measured step's loss once at the end.

fp16 configurations also need loss scaling, without touching the script: the
scalar is multiplied by a ``torch.amp.GradScaler``'s scale before backward; a
global optimizer step pre-hook unscales the gradients (``scaler.unscale_``)
and, when they hold an inf or NaN, drops them so that the optimizer skips
every parameter, as ``scaler.step`` would; the scale is updated before the
next backward.  A script that makes its own GradScaler is left alone.
Gradient clipping in the script sees the scaled gradients (it runs before
the step).
"""

from __future__ import annotations

from typing import Any, List, Optional, Set

import torch


class BackwardTap:
    """Keeps the last loss; scales it under fp16."""

    def __init__(self, scale_losses: bool) -> None:
        self.scale_losses = scale_losses
        self.last: Optional[torch.Tensor] = None
        self.scaler: Any = None
        self.script_scaler = False
        self.skipped_steps = 0
        self._scaled = False  # a loss was scaled since the last update
        self._pending_update = False
        self._unscaled: Set[int] = set()  # optimizers unscaled since the last update
        self._original_backward: Any = None
        self._original_scaler_init: Any = None
        self._handles: List[Any] = []
        self._making_scaler = False

    def install(self) -> None:
        original = torch.autograd.backward
        tap = self

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
                tap.last = tensors.detach()
                tensors = tap._scale(tensors)
            return original(tensors, *args, **kwargs)

        self._original_backward = original
        torch.autograd.backward = backward
        if self.scale_losses:
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            self._handles.append(register_optimizer_step_pre_hook(self._before_step))
            self._watch_script_scalers()

    def uninstall(self) -> None:
        if self._original_backward is not None:
            torch.autograd.backward = self._original_backward
            self._original_backward = None
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._original_scaler_init is not None:
            from torch.amp.grad_scaler import GradScaler

            GradScaler.__init__ = self._original_scaler_init  # type: ignore[method-assign]
            self._original_scaler_init = None

    def _watch_script_scalers(self) -> None:
        from torch.amp.grad_scaler import GradScaler

        original = GradScaler.__init__
        tap = self

        def __init__(scaler: Any, *args: Any, **kwargs: Any) -> None:
            if not tap._making_scaler:
                tap.script_scaler = True
            original(scaler, *args, **kwargs)

        self._original_scaler_init = original
        GradScaler.__init__ = __init__  # type: ignore[method-assign]

    # -- fp16 loss scaling -----------------------------------------------------
    def _scale(self, loss: torch.Tensor) -> torch.Tensor:
        if not self.scale_losses or self.script_scaler or not loss.is_floating_point() or torch.compiler.is_compiling():
            return loss
        if self.scaler is None:
            from torch.amp.grad_scaler import GradScaler

            self._making_scaler = True
            try:
                self.scaler = GradScaler(loss.device.type)
            finally:
                self._making_scaler = False
        if self._pending_update:
            self.scaler.update()
            self._pending_update, self._scaled = False, False
            self._unscaled.clear()
        self._scaled = True
        return self.scaler.scale(loss)

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._scaled or self.scaler is None or id(optimizer) in self._unscaled:
            return
        self._unscaled.add(id(optimizer))
        self.scaler.unscale_(optimizer)
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if params and not bool(torch.stack([torch.isfinite(p.grad).all() for p in params]).all()):
            for param in params:  # every parameter without a gradient: the optimizer skips them all
                param.grad = None
            self.skipped_steps += 1
        self._pending_update = True
