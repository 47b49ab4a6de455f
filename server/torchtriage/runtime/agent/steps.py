"""Detect training steps without touching the user's script.

Signals, in order of preference: a global optimizer step post-hook (several
optimizers per iteration count once; under a ``GradScaler``, ``scaler.step(opt)``
counts instead, since it skips ``opt.step()`` on overflow), DataLoader ``__next__``, and the
outermost module forward (for inference scripts).  The first optimizer step
decides at once; the fallbacks decide only after ``FALLBACK_AFTER`` signals
without any optimizer step, so gradient accumulation is not mistaken for a
loader-driven loop.

Under torch.compile the global forward hooks must not change the user's
program: they return at once while dynamo traces them (``is_compiling``), so
no compiled graph contains them, and they are not removed once dynamo is
loaded, since dynamo guards on the number of global hooks and removing one
would recompile every graph that inlined a module call.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional

import torch

FALLBACK_AFTER = 4
_compiling: Callable[[], bool] = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


class StepDetector:
    """Calls ``on_step()`` once per training iteration once a mode is chosen."""

    def __init__(self, on_step: Callable[[], None], on_mode: Callable[[str], None]) -> None:
        self.on_step = on_step
        self.on_mode = on_mode
        self.mode: Optional[str] = None
        self.loader_workers: Optional[int] = None
        self._handles: List[Any] = []
        self._forward_handles: List[Any] = []
        self._seen: List[int] = []  # ids of optimizers that stepped in this iteration
        self._last: Optional[int] = None  # the optimizer that closes an iteration, once learned
        self._loader_calls = 0
        self._forward_calls = 0
        self._depth = 0
        self._original_next: Any = None
        self._patched_next: Any = None
        self._original_scaler_step: Any = None
        self._in_scaler_step = 0
        self._in_optimizer_hook = 0
        self.enabled = True

    # -- installation -------------------------------------------------
    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._optimizer_stepped))
        from torch.nn.modules import module as nn_module

        self._forward_handles.append(nn_module.register_module_forward_pre_hook(self._forward_pre))
        self._forward_handles.append(nn_module.register_module_forward_hook(self._forward_post, always_call=True))
        from torch.utils.data import dataloader

        base = dataloader._BaseDataLoaderIter
        original = base.__next__
        detector = self

        def __next__(iterator: Any) -> Any:
            detector._loader_next(iterator)
            return original(iterator)

        self._original_next = original
        self._patched_next = __next__
        base.__next__ = __next__  # type: ignore[method-assign]
        self._patch_grad_scaler()

    def _patch_grad_scaler(self) -> None:
        """``scaler.step(opt)`` is the step under mixed precision: it runs ``opt.step()``
        only when the gradients are finite, so the optimizer hook alone misses skipped steps."""
        try:
            from torch.amp.grad_scaler import GradScaler
        except ImportError:  # older torch: no device-generic scaler
            return
        original = GradScaler.step
        detector = self

        def step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            detector._in_scaler_step += 1
            try:
                result = original(scaler, optimizer, *args, **kwargs)
            finally:
                detector._in_scaler_step -= 1
            detector._stepped(optimizer)
            return result

        self._original_scaler_step = original
        GradScaler.step = step  # type: ignore[method-assign]

    def uninstall(self) -> None:
        """Stop counting and take the hooks out, except what cannot be taken out safely now.

        Inside an optimizer step torch is iterating over the global hook dict: removing
        ours there breaks the step of any script (or tool) with a global hook after ours
        ("OrderedDict mutated during iteration"), so the hook stays, disabled.  A
        ``DataLoader.__next__`` that someone patched over ours is left as they set it.
        """
        self.enabled = False
        self._drop_forward_hooks()
        if not self._in_optimizer_hook:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()
        if self._original_next is not None:
            from torch.utils.data import dataloader

            if dataloader._BaseDataLoaderIter.__next__ is self._patched_next:
                dataloader._BaseDataLoaderIter.__next__ = self._original_next  # type: ignore[method-assign]
            self._original_next = None
        if self._original_scaler_step is not None:
            from torch.amp.grad_scaler import GradScaler

            GradScaler.step = self._original_scaler_step  # type: ignore[method-assign]
            self._original_scaler_step = None

    def _drop_forward_hooks(self) -> None:
        if "torch._dynamo" in sys.modules:
            return  # removing a global hook would recompile compiled graphs (see the module doc); disabled instead
        for handle in self._forward_handles:
            handle.remove()
        self._forward_handles.clear()

    # -- signals -------------------------------------------------------
    def _choose(self, mode: str) -> None:
        self.mode = mode
        if mode != "forward":
            self._drop_forward_hooks()
        self.on_mode(mode)

    def _optimizer_stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._in_scaler_step:
            return  # counted when scaler.step() returns, skipped or not
        self._in_optimizer_hook += 1
        try:
            self._stepped(optimizer)
        finally:
            self._in_optimizer_hook -= 1

    def _stepped(self, optimizer: Any) -> None:
        if not self.enabled:
            return
        if self.mode is None:
            self._choose("optimizer")
        if self.mode != "optimizer":
            return
        key = id(optimizer)
        if self._last is not None:
            if key == self._last:
                self.on_step()
            return
        if key in self._seen:  # the cycle repeats: the optimizer before this one closes an iteration
            self._last = self._seen[-1]
            self._seen = []
            self.on_step()
            return
        self._seen.append(key)

    def _loader_next(self, iterator: Any) -> None:
        if not self.enabled:
            return
        workers = getattr(iterator, "_num_workers", None)
        if isinstance(workers, int):
            self.loader_workers = max(workers, self.loader_workers or 0)
        if self.mode is None:
            self._loader_calls += 1
            if self._loader_calls > FALLBACK_AFTER:
                self._choose("dataloader")
        if self.mode == "dataloader":
            self.on_step()

    def _forward_pre(self, module: Any, args: Any) -> None:
        if _compiling():
            return
        self._depth += 1
        if self._depth != 1 or not self.enabled:
            return
        if self.mode is None and self._loader_calls == 0:
            self._forward_calls += 1
            if self._forward_calls > FALLBACK_AFTER:
                self._choose("forward")
        if self.mode == "forward":
            self.on_step()

    def _forward_post(self, module: Any, args: Any, output: Any) -> None:
        if _compiling():
            return
        self._depth = max(0, self._depth - 1)

    def hook_codes(self) -> List[Any]:
        """Code objects of the hooks that run inside the user's modules: dynamo must not compile them as frames."""
        return [StepDetector._forward_pre.__code__, StepDetector._forward_post.__code__]


def cuda_available() -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # broken driver installs raise here
        return False
