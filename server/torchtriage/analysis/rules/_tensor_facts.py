"""What the tensor oracle (:mod:`._tensors`) knows without inference: the vocabulary of names,
attributes, methods and namespaces that hold or give tensors or host values, and small
structural questions about bindings and scopes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .base import RuleContext
from ..hotloops.finder import HotRegion
from ._scopes import Binding
from ..syntax import parameter_names

TENSOR_NAME = re.compile(
    r"^(loss|losses|total_loss|\w+_loss|acc|accuracy|logits|\w+_logits|preds?|predictions|"
    r"outputs?|probs|y_hat|yhat)$"
)
# Objects that hold tensors but are not one: branching on them is no sync.
NEVER_TENSOR_NAME = re.compile(
    r"^(self|cls|args|opt|opts|cfg|config|hparams|hp|group|param_group|state|module|submodule|m|layer|"
    r"block|name|key|mode|phase|split|device|dtype|trainer|accelerator|fabric|\w*(model|net|module|"
    r"config|cfg|args|flag|mode|name|path|dir|type|optimizer|scheduler|scaler|writer|logger))$"
    r"|^(i|j|k|n|t|it|\w*_?(step|steps|epoch|epochs|episode|iter|iters|iteration|idx|index|count|counter))$",
    re.I,
)

# Attributes of a tensor-valued object that are tensors themselves.
TENSOR_ATTRS = re.compile(
    r"^(grad|data|T|mT|H|real|imag|loss|\w+_loss|logits|\w+_logits|last_hidden_state|hidden_states|"
    r"pooler_output|pred|preds|predictions|probs|scores?|output|outputs)$"
)
MODEL_CALLEE = re.compile(
    r"^(model|net|network|ddp_model|raw_model|classifier|generator|discriminator|encoder|decoder|"
    r"policy|backbone|teacher|student|ema_model|\w+_model|criterion|crit|\w+_criterion|"
    r"loss_fn|loss_func|lossfn|loss_function|\w+_loss_fn)$",
    re.I,
)
NON_TENSOR_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "grad_fn", "layout", "is_leaf",
     "is_sparse", "is_quantized", "is_meta", "names", "itemsize", "nbytes", "training"}
)
NON_TENSOR_METHODS = frozenset(
    {"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "nelement", "ndimension",
     "element_size", "stride", "data_ptr", "is_contiguous", "is_floating_point", "is_complex",
     "get_device", "keys", "values", "items", "backward", "zero_grad", "step", "state_dict",
     "parameters", "named_parameters", "named_children", "named_modules", "children", "modules",
     "append", "extend", "format", "join", "split", "startswith", "endswith", "update", "add_scalar",
     "log", "write", "get", "pop", "copy", "count", "index", "decode", "batch_decode", "lower", "upper",
     "strip", "astype"}
)
# Iterating these gives (name, module) pairs or modules, never batch data.
STRUCTURE_ITERATORS = frozenset(
    {"named_children", "named_modules", "children", "modules", "named_parameters", "parameters",
     "named_buffers", "buffers", "items", "keys", "values", "param_groups"}
)
TENSOR_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"})
TORCH_NON_TENSOR = re.compile(
    r"^(is_|get_|set_|use_|no_grad|enable_grad|inference_mode|autocast|compile|device|save|load|"
    r"manual_seed|seed|typename|numel|equal|allclose|finfo|iinfo|result_type|can_cast|promote_types)"
)
BUILTIN_NON_TENSOR = frozenset(
    {"len", "int", "float", "bool", "str", "repr", "range", "isinstance", "hasattr", "print",
     "sorted", "list", "dict", "tuple", "set", "zip", "enumerate", "type", "id", "hash", "format",
     "iter", "open", "super", "round"}
)
NON_TENSOR_MODULES = ("numpy.", "math.", "time.", "random.", "statistics.", "os.", "json.", "sys.")
ORDERING = frozenset({"list", "tuple", "reversed", "sorted"})
HOST_CONSTANTS = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp,
                   ast.SetComp, ast.GeneratorExp, ast.Lambda)


def registered_tensors(ctx: RuleContext) -> frozenset[str]:
    """Attribute names registered as module buffers or parameters (``self.register_buffer("queue", ...)``,
    ``self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)``): they live where the model does."""
    if "register_" not in ctx.source and "Parameter(" not in ctx.source:
        return frozenset()
    registered = {
        node.args[0].value
        for node in ctx.nodes_of(ast.Call)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("register_buffer", "register_parameter") and node.args
        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    }
    for node in ctx.nodes_of(ast.Assign) if "Parameter(" in ctx.source else ():
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, ast.Call) and ctx.qualname(value.func) in _PARAMETER_CLASSES:
            registered.update(t.attr for t in node.targets  # type: ignore[attr-defined]
                              if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")
    return frozenset(registered)


_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def assigns_none(binding: Binding) -> bool:
    statement = binding[0]
    value = getattr(statement, "value", None)
    return isinstance(statement, ast.Assign) and isinstance(value, ast.Constant) and value.value is None


def own_nodes_of(func: ast.AST) -> list[ast.AST]:
    """The nodes of a function body, not of functions or classes nested in it."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def is_step_parameter(name: str, scope: ast.AST, region: HotRegion | None) -> bool:
    """A parameter of a per-step function or lambda that its per-step call sites hand step data
    (``to_np = lambda t: t.cpu().numpy()`` called as ``to_np(out)``): a tensor whatever its name."""
    if region is None or scope is not region.node or name not in region.batch_names:
        return False
    arguments = getattr(scope, "args", None)
    return isinstance(arguments, ast.arguments) and name in parameter_names(arguments)


def iterates_structure(iterable: ast.AST) -> bool:
    """``self.param_groups``, ``model.named_children()``, ``d.items()``: never batch data."""
    if isinstance(iterable, ast.Call):
        iterable = iterable.func
    return isinstance(iterable, ast.Attribute) and iterable.attr in STRUCTURE_ITERATORS


# torch functions outside the tensor namespaces that return a tensor (on the parameters' device)
TENSOR_RESULTS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.get_total_norm", "torch.nn.utils.parameters_to_vector",
})
# methods of training wrappers that return such a tensor: ``accelerator.clip_grad_norm_(...)``, FSDP's ``model.clip_grad_norm_(...)``
TENSOR_RESULT_METHODS = frozenset({"clip_grad_norm_"})


def _tensor_api() -> frozenset[str]:
    """torch.Tensor's public attribute names, from ``tensor_api.txt`` (kept as data: the linter never imports torch)."""
    text = (Path(__file__).with_name("tensor_api.txt")).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


# What a tensor can be asked: a method outside it (``f.is_file()``) has a receiver that is no tensor.
TENSOR_API = _tensor_api()


# torch factories that build on the host unless given a device (``torch.ones(1, 3)``, the legacy
# ``torch.Tensor([a, b])``): reading what they make waits for no kernel
HOST_FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace", "rand", "randn", "randint", "randperm",
    "Tensor", "FloatTensor", "LongTensor", "IntTensor", "DoubleTensor", "HalfTensor", "ByteTensor", "BoolTensor", "from_numpy",
})
_LITERALS = (ast.List, ast.Tuple, ast.Constant)


def builds_on_host(call: ast.Call, qualname: str) -> bool:
    """``torch.ones(1, 3)``, ``torch.Tensor([loc, conf])``, ``torch.tensor([1, 2])``: made on the host (no
    ``device=``; ``torch.tensor`` only from a literal, since a tensor argument keeps its device)."""
    module, _, function = qualname.rpartition(".")
    if module != "torch" or any(k.arg == "device" for k in call.keywords):
        return False
    if function in ("tensor", "as_tensor"):
        return bool(call.args) and isinstance(call.args[0], _LITERALS)
    return function in HOST_FACTORIES


def torch_function_result(qualname: str) -> bool | None:
    """``torch.isnan`` -> True; ``torch.cuda.is_available`` / ``torch.nn.Linear`` -> not a tensor."""
    if qualname in TENSOR_RESULTS:
        return True
    module, _, function = qualname.rpartition(".")
    if module not in TENSOR_NAMESPACES:
        return None
    if TORCH_NON_TENSOR.match(function):
        return False
    if function[:1].isupper():
        return True if function.endswith("Tensor") else None
    return True


_MODEL_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                             "torch.nn.parallel.DistributedDataParallel"})


def model_names(ctx: RuleContext) -> set[str]:
    """Plain names the file uses as a model: ``x.parameters()`` / ``x.named_parameters()`` is read, or ``x`` is bound
    to a ``DataParallel`` / ``DistributedDataParallel`` wrapper."""
    found: set[str] = set()
    if "parameters(" not in ctx.source and "DataParallel" not in ctx.source:
        return found
    for node in ctx.nodes_of(ast.Call):
        func = node.func  # type: ignore[attr-defined]
        if isinstance(func, ast.Attribute) and func.attr in ("parameters", "named_parameters") \
                and isinstance(func.value, ast.Name) and func.value.id != "self":
            found.add(func.value.id)
    for node in ctx.nodes_of(ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("cuda", "to"):
            value = value.func.value  # ``DataParallel(net).cuda()``
        if isinstance(value, ast.Call) and (ctx.qualname(value.func) or "") in _MODEL_WRAPPERS:
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))  # type: ignore[attr-defined]
    return found
