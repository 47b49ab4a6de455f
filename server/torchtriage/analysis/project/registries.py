"""Classes a registry builds by name: which project classes one lookup call may construct.

Research code often builds its model, loss and networks from a name in its options::

    @ARCH_REGISTRY.register()                  def build_network(opt):
    class SwinIR(nn.Module):                       return ARCH_REGISTRY.get(opt["type"])(**opt)
        def forward(self, x): ...

(BasicSR, SegmenTron, detectron2/fvcore and mmcv style.)  Nothing names the class at the call,
but the run builds one of the classes registered with that registry, so a per-step call of the
result (``self.net_g(x)``) runs one of their ``forward`` methods.  A registry is known by the
last name of the object its decorators are called on (``ARCH_REGISTRY``, ``registry.MODELS``);
the lookups read are ``REG.get(name)(...)``, ``REG[name](...)`` and ``REG.build(cfg)``.
Registered functions (``@BACKBONE_REGISTRY.register() def resnet50(...)``) count as the
factories they are.  Nothing is imported or executed.
"""

from __future__ import annotations

import ast
from typing import Union

from .modules import FunctionNode, ModuleTable, ProjectModule
from ..syntax import bound_name

Registered = tuple[ProjectModule, Union[ast.ClassDef, FunctionNode]]
REGISTER_METHODS = frozenset({"register", "register_module"})
LOOKUP_METHODS = frozenset({"get"})  # ``REG.get(name)`` gives the class; calling it builds the instance
BUILD_METHODS = frozenset({"build"})  # ``REG.build(cfg)`` builds the instance itself


def _registers_with(decorator: ast.expr) -> str | None:
    """The registry a decorator registers with: ``@REG.register()``, ``@REG.register``, ``@REG.register_module(...)``."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(func, ast.Attribute) and func.attr in REGISTER_METHODS:
        return bound_name(func.value)
    return None


class RegistryIndex:
    """The project's registered classes and functions, per registry name (read on first use)."""

    def __init__(self, table: ModuleTable) -> None:
        self.table = table
        self._registered: dict[str, list[Registered]] | None = None

    def registered(self, registry: str) -> list[Registered]:
        """What the project registers with ``registry``, in file order."""
        if self._registered is None:
            found: dict[str, list[Registered]] = {}
            for module in self.table.by_path.values():
                if module.ctx is None or module.is_test or "register" not in module.ctx.source:
                    continue
                for node in [*module.classes.values(), *module.functions.values()]:
                    for decorator in node.decorator_list:
                        name = _registers_with(decorator)
                        if name is not None:
                            found.setdefault(name, []).append((module, node))
            self._registered = found
        return self._registered.get(registry, [])

    def lookup(self, value: ast.expr) -> str | None:
        """The registry whose lookup builds ``value``: ``REG.get(name)(...)``, ``REG[name](...)``, ``REG.build(cfg)``."""
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr in LOOKUP_METHODS:
            name = bound_name(func.func.value)
        elif isinstance(func, ast.Subscript):
            name = bound_name(func.value)
        elif isinstance(func, ast.Attribute) and func.attr in BUILD_METHODS:
            name = bound_name(func.value)
        else:
            return None
        return name if name is not None and self.registered(name) else None
