"""Submodules kept in containers, and the loops that call them::

    self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])     for blk in self.blocks:
    self.stem = nn.Sequential(Conv(3, 64), *[Res(64) for _ in range(4)])    x = blk(x)
    layers = []; layers.append(Stage(c)); self.stages = nn.Sequential(*layers)

A model's forward runs its blocks through such a container, so what builds the elements says which
classes' ``forward`` a call of an element (or of a ``Sequential``) runs.  Only this module's syntax
is read here; the classes are looked up by the call graph.
"""

from __future__ import annotations

import ast

from ..syntax import bound_name

CONTAINER_TYPES = frozenset({"ModuleList", "Sequential", "ModuleDict"})
_ADDERS = frozenset({"append", "extend", "insert", "add_module"})


def self_attribute(node: ast.AST, attr: str | None = None) -> str | None:
    """``attr`` for ``self.attr`` (when it is the one asked for), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr if attr is None or node.attr == attr else None
    return None


def element_values(cls: ast.ClassDef, attr: str) -> list[ast.expr]:
    """The expressions that build the elements of the container ``self.attr`` in ``cls``."""
    found: list[ast.expr] = []
    for function in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and any(self_attribute(t, attr) for t in node.targets):
                if _is_container(node.value):
                    found.extend(_elements(node.value, function))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDERS \
                    and self_attribute(node.func.value, attr):
                found.extend(_added(node, function))
    return found


def iterated_attribute(loop: ast.For | ast.AsyncFor, name: str) -> str | None:
    """The container ``self.attr`` whose elements a loop binds to ``name``: ``for blk in self.blocks``,
    ``for i, blk in enumerate(self.blocks)``, ``for blk, norm in zip(self.blocks, self.norms)``,
    ``for blk in self.blocks.values()``."""
    target, source = loop.target, loop.iter
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate" and source.args:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        target, source = target.elts[1], source.args[0]
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "zip":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == len(source.args)):
            return None
        for element, zipped in zip(target.elts, source.args):
            if isinstance(element, ast.Name) and element.id == name:
                return _container_of(zipped)
        return None
    if isinstance(target, ast.Name) and target.id == name:
        return _container_of(source)
    return None


def _container_of(source: ast.expr) -> str | None:
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "values" and not source.args:
        source = source.func.value
    return self_attribute(source)


def _is_container(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    return bound_name(value.func) in CONTAINER_TYPES


def _elements(value: ast.expr, function: ast.AST) -> list[ast.expr]:
    """What a container call, list or comprehension holds (a name: the list its function builds)."""
    if isinstance(value, ast.Starred):
        value = value.value
    if _is_container(value):
        assert isinstance(value, ast.Call)
        return [e for arg in value.args for e in _elements(arg, function)]  # (a ModuleDict's dict: its values)
    if isinstance(value, (ast.List, ast.Tuple)):
        return [e for elt in value.elts for e in (_elements(elt, function) if isinstance(elt, ast.Starred) else [elt])]
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return [value.elt]
    if isinstance(value, ast.Dict):
        return [v for v in value.values if v is not None]
    if isinstance(value, ast.Name):
        return _built_list(value.id, function)
    if isinstance(value, ast.Call):
        return [value]  # ``nn.Sequential(Conv(...), Norm(...))``: each argument is an element
    return []


def _built_list(name: str, function: ast.AST) -> list[ast.expr]:
    """The elements a function puts in the list ``name``: ``layers = [...]``, ``layers.append(X)``, ``layers += [...]``."""
    found: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) \
                and isinstance(node.value, (ast.List, ast.ListComp, ast.Tuple)):
            found.extend(_elements(node.value, function))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            found.extend(_elements(node.value, function))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDERS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            found.extend(_added(node, function))
    return found


def _added(call: ast.Call, function: ast.AST) -> list[ast.expr]:
    """What ``append(X)``, ``extend([...])``, ``insert(i, X)`` or ``add_module(name, X)`` adds."""
    attr = call.func.attr  # type: ignore[attr-defined]
    if attr == "extend" and call.args:
        return _elements(call.args[0], function)
    if attr in ("insert", "add_module") and len(call.args) >= 2:
        return [call.args[1]]
    return list(call.args[:1])
