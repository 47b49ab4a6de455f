"""The methods a training step calls on its model when the model's class is not in sight.

A step loop that takes its model as a parameter, or from a registry, calls
``model(batch)`` and then ``model.loss(out, y)`` or ``model.calc_loss(...)``:
the model is one of the project's ``nn.Module`` classes, chosen at run time,
and the method runs every step.  When the call graph cannot tell which class
(``instance_classes`` finds none), a receiver that the same function also
calls like a model (``model(x)``, ``model.forward(x)``) holds one of the
project's module classes, so the call runs that class's method: each project
module class that defines it is a candidate.

Left out: dunders, the ``nn.Module`` API and other library names
(the call graph's ``_COMMON_METHODS``, ``MODULE_API``), ``forward`` itself (the
call graph follows calls of the model), and names that more than
``MAX_CLASSES`` classes define (no longer telling).
"""

from __future__ import annotations

import ast

from ..incremental.walks import scope_walk
from ..syntax import bound_name, names_module_base
from .class_tree import ClassTree
from .modules import FunctionNode, ProjectModule

FunctionRef = tuple[ProjectModule, FunctionNode]

MAX_CLASSES = 128  # project module classes defining one method name, at most (a guard)
MODULE_API = frozenset(  # nn.Module's own methods: a project override is not a per-step call of the model's
    {"forward", "train", "eval", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "apply", "parameters",
     "buffers", "children", "modules", "requires_grad_", "share_memory", "type", "zero_grad", "state_dict",
     "load_state_dict", "register_buffer", "register_parameter", "get_submodule", "get_parameter"}
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class ModelMethods:
    """Project ``nn.Module`` classes' methods by name, and which names a function calls like a model."""

    def __init__(self, tree: ClassTree, library_names: frozenset[str] = frozenset()) -> None:
        self.tree = tree
        self.library_names = library_names  # method names library objects define too (the call graph's list)
        self._by_name: dict[str, list[FunctionRef]] | None = None
        self._called: dict[ast.AST, frozenset[str]] = {}  # scope -> names it calls like a model

    def of_model(self, module: ProjectModule, receiver: str, call: ast.Call, method: str) -> list[FunctionRef]:
        """The project module classes' own ``method`` when ``receiver`` is called like a model in the function
        holding ``call`` (empty otherwise, or when the name says nothing; see the module doc)."""
        if method.startswith("__") or method in MODULE_API or method in self.library_names or module.ctx is None:
            return []
        scope = module.ctx.enclosing_function(call) or module.ctx.tree
        if receiver not in self._called_like_a_model(scope):
            return []
        found = self._methods().get(method, [])
        return found if len(found) <= MAX_CLASSES else []

    def _called_like_a_model(self, scope: ast.AST) -> frozenset[str]:
        names = self._called.get(scope)
        if names is None:
            found = set()
            for node in scope_walk(scope, _SCOPES):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Name):
                    found.add(func.id)
                elif isinstance(func, ast.Attribute) and func.attr == "forward" and isinstance(func.value, ast.Name):
                    found.add(func.value.id)
            names = self._called[scope] = frozenset(found)
        return names

    def _methods(self) -> dict[str, list[FunctionRef]]:
        if self._by_name is None:
            table: dict[str, list[FunctionRef]] = {}
            for module, cls in self._module_classes():
                for node in cls.body:
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        table.setdefault(node.name, []).append((module, node))
            self._by_name = table
        return self._by_name

    def _module_classes(self) -> list[tuple[ProjectModule, ast.ClassDef]]:
        """Project classes whose base is named ``...Module`` (``nn.Module``, ``LightningModule``), and the project
        classes that derive from them, in files that are not tests."""
        classes = self.tree.classes()
        modules = self.tree.below([cls for _, cls in classes if any(names_module_base(b) for b in cls.bases)])
        return [(m, cls) for m, cls in classes if cls in modules]
