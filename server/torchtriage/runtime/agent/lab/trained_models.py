"""Find the models being trained and run their forward under autocast, or compiled.

A model is *trained* when an optimizer owns one of its parameters (every
``Optimizer.add_param_group`` call, the constructor's included, is watched).
A global forward pre-hook sees each module call; the outermost call of a
trained module, one not already inside another trained call, is the model's
forward.  Around that call (and nothing else: not the loss outside it, not
backward, not the optimizer) the configured autocast is entered and left by
the matching post-hook, which hands the output on in fp32 (``float32_outputs``).
For compiled configurations the model's ``forward`` is replaced, at its first
call, by ``torch.compile`` of it: the first call runs eagerly (a warm-up step),
every later call goes through the compiled forward, and the calls are counted
to prove it.

Samples per step: the leading dimension of the first tensor among the
positional arguments (else of the output), summed over the calls of the first
model found in the step (gradient accumulation counts every micro-batch).
Output dtype: the first floating-point tensor of the output, which shows that
autocast really ran.  A model the script compiled itself is not compiled again.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Iterator, List, Optional

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class UnsupportedPrecision(RuntimeError):
    """The configuration's dtype cannot run on the model's device."""


def tensors_in(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """Tensors inside ``value`` (tuples, lists, dicts, nested a few levels), in order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item, depth + 1)


def float32_outputs(value: Any, depth: int = 0) -> Any:
    """``value`` with its bf16 / fp16 tensors cast to fp32 (tuples, lists, dicts, nested a few levels).

    Autocast covers only the model's forward, so the loss the script computes after it would meet a
    low-precision output and an fp32 target: on CUDA ``mse_loss``'s backward then fails ("Found dtype
    Float but expected BFloat16", seen on an H100).  The ops autocast would run in fp32 (losses,
    softmax) get fp32 outputs, as when the script puts its loss inside the autocast block.
    """
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype in (torch.bfloat16, torch.float16) else value
    if depth >= 4:
        return value
    if isinstance(value, dict):  # in place: keeps dict subclasses (a transformers ModelOutput) whole
        for key in list(value):
            value[key] = float32_outputs(value[key], depth + 1)
        return value
    if isinstance(value, list):
        return [float32_outputs(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        items = [float32_outputs(item, depth + 1) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def leading_dim(value: Any) -> Optional[int]:
    for tensor in tensors_in(value):
        if tensor.dim() >= 1:
            return int(tensor.shape[0])
    return None


class TrainedModels:
    """Global hooks that wrap the trained models' forward; counters the lab reads."""

    def __init__(self, precision: str, compile_mode: Optional[str]) -> None:
        self.dtype = DTYPES.get(precision)
        self.compile_mode = compile_mode
        self.trained: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()  # by id: tensors compare by value
        self._verdicts: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()
        self._seen: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.names: List[str] = []
        self.device: Optional[str] = None
        self._active: Any = None
        self._depth = 0
        self._autocast: Any = None
        self._samples: Optional[int] = None
        self.batch: Optional[int] = None  # samples through the first model in the current step
        self._primary: Any = None  # the first model found: its calls count the samples
        self.notes: List[str] = []
        self.output_dtype: Optional[str] = None
        self.calls = 0
        self.compiled_calls = 0
        self.script_autocast = False
        self._handles: List[Any] = []
        self._original_add_param_group: Any = None

    # -- installation ----------------------------------------------------------
    def install(self) -> None:
        from torch.nn.modules import module as nn_module
        from torch.optim import Optimizer

        original = Optimizer.add_param_group
        models = self

        def add_param_group(optimizer: Any, param_group: Any) -> Any:
            result = original(optimizer, param_group)
            models.own(optimizer.param_groups[-1]["params"])
            return result

        self._original_add_param_group = original
        Optimizer.add_param_group = add_param_group  # type: ignore[method-assign]
        self._handles.append(nn_module.register_module_forward_pre_hook(self._pre))
        self._handles.append(nn_module.register_module_forward_hook(self._post, always_call=True))

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._original_add_param_group is not None:
            from torch.optim import Optimizer

            Optimizer.add_param_group = self._original_add_param_group  # type: ignore[method-assign]
            self._original_add_param_group = None

    def own(self, params: Any) -> None:
        """An optimizer now owns ``params``: modules holding them are trained."""
        for param in params:
            if isinstance(param, torch.Tensor):
                self.trained[id(param)] = param
        self._verdicts = weakref.WeakKeyDictionary()

    # -- hooks -------------------------------------------------------------------
    def _is_trained(self, module: Any) -> bool:
        try:
            known = self._verdicts.get(module)
        except TypeError:  # a module that cannot be weakly referenced or hashed
            known = None
        if known is None:
            known = any(self.trained.get(id(p)) is p for p in module.parameters())
            try:
                self._verdicts[module] = known
            except TypeError:
                pass
        return known

    def _pre(self, module: Any, args: Any) -> None:
        if torch.compiler.is_compiling():  # traced inside a compiled forward: nothing to do
            return
        if self._active is not None:
            if module is self._active:
                self._depth += 1
            return
        if not self.trained or not self._is_trained(module):
            return
        device = self._first_call(module)
        if torch.is_autocast_enabled(device):
            self.script_autocast = True
        if self.dtype is not None:
            context = torch.autocast(device, dtype=self.dtype)
            context.__enter__()
            self._autocast = context
        self._active, self._depth = module, 1
        self.calls += 1
        self._samples = leading_dim(args) if module is self._primary else None

    def _post(self, module: Any, args: Any, output: Any) -> Any:
        """Leave the model's autocast; its output, cast back to fp32 when autocast ran (``float32_outputs``)."""
        if module is not self._active or torch.compiler.is_compiling():
            return None
        self._depth -= 1
        if self._depth > 0:
            return None
        self._active = None
        if self._autocast is not None:
            context, self._autocast = self._autocast, None
            context.__exit__(None, None, None)
        for tensor in tensors_in(output):
            if tensor.is_floating_point():
                self.output_dtype = str(tensor.dtype).replace("torch.", "")
                break
        if module is self._primary:
            samples = self._samples if self._samples is not None else leading_dim(output)
            if samples is not None:
                self.batch = (self.batch or 0) + samples
        if self.dtype is not None:
            return float32_outputs(output)
        return None

    def _first_call(self, module: Any) -> str:
        """The model's device type; on its first call also check the dtype and install the compiled forward."""
        param = next(iter(module.parameters()), None)
        device = param.device.type if param is not None else "cpu"
        if module in self._seen:
            return device
        self._seen.add(module)
        self.device = self.device or device
        self.names.append(type(module).__name__)
        if self._primary is None:
            self._primary = module
        if self.dtype is torch.bfloat16 and device == "cuda" and not torch.cuda.is_bf16_supported():
            raise UnsupportedPrecision(f"bf16 is not supported on {torch.cuda.get_device_name(0)} (torch.cuda.is_bf16_supported() is False)")
        if self.dtype is not None and not torch.amp.is_autocast_available(device):
            raise UnsupportedPrecision(f"autocast is not available on device type {device!r}")
        if self.compile_mode is not None:
            if _compiled_by_script(module):
                self.notes.append(f"the script compiles {type(module).__name__} itself: it was not compiled again")
            else:
                self._compile(module)
        elif _compiled_by_script(module):
            self.notes.append("the script compiles the model itself: this row is compiled too")
        return device

    def _compile(self, module: Any) -> None:
        original = module.forward
        mode = None if self.compile_mode == "default" else self.compile_mode
        compiled = torch.compile(original, mode=mode)
        models = self

        @functools.wraps(original)
        def forward(*args: Any, **kwargs: Any) -> Any:
            models.compiled_calls += 1
            return compiled(*args, **kwargs)

        module.forward = forward

    # -- per step --------------------------------------------------------------------
    def take_step(self) -> Optional[int]:
        """The samples the first model saw in the step that just ended; starts the next step."""
        batch, self.batch = self.batch, None
        return batch


def _compiled_by_script(module: Any) -> bool:
    """``torch.compile(model)`` returns an ``OptimizedModule``; ``model.compile()`` sets ``_compiled_call_impl``."""
    return type(module).__name__ == "OptimizedModule" or getattr(module, "_compiled_call_impl", None) is not None
