"""Knob values that are not literals: argparse defaults, config-class fields, module constants.

``DataLoader(..., num_workers=args.workers)`` with ``add_argument("--workers", default=4)``
holds 4 unless the command line says otherwise; ``cfg.num_workers`` with a config class
field ``num_workers: int = 0`` holds 0.  Each source file contributes its own table
(:func:`file_defaults`); the project model merges the tables of every project file so a
default written in the entry script reaches the module that builds the loader.  A name
with two different defaults is unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .syntax import keyword_value

if TYPE_CHECKING:
    from .module_index import ModuleIndex


@dataclass(frozen=True)
class Default:
    """A constant a name or attribute holds by default, and where that was written."""

    value: object
    where: str  # "the `--workers` default (main.py:9)"


@dataclass(frozen=True)
class CpuCount:
    """A default computed from the machine's CPU count (``os.cpu_count()``, ``mp.cpu_count() - 1``,
    ``min(8, os.cpu_count())``): not a constant, but a worker count above zero wherever training runs."""

    source: str

    def __repr__(self) -> str:
        return self.source


_CPU_COUNT_PARTS = (ast.Constant, ast.BinOp, ast.operator, ast.BoolOp, ast.boolop, ast.Call, ast.Attribute, ast.Name, ast.Load)


def cpu_count_expression(node: ast.AST | None) -> bool:
    """``os.cpu_count()`` / ``multiprocessing.cpu_count()``, alone or in arithmetic with constants and
    ``min``/``max``/``int``: a number of CPUs (what a worker count is set from)."""
    if node is None:
        return False
    counts = False
    for part in ast.walk(node):
        if not isinstance(part, _CPU_COUNT_PARTS):
            return False
        if isinstance(part, ast.Call):
            func = part.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "cpu_count" and not part.args:
                counts = True
            elif name not in ("min", "max", "int"):
                return False
    return counts


def _constant(node: ast.AST | None) -> tuple[bool, object]:
    if cpu_count_expression(node):
        return True, CpuCount(ast.unparse(node))  # type: ignore[arg-type]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str)) :
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, -value
    return False, None


def _dest(call: ast.Call) -> tuple[str, str] | None:
    """(destination, option as written) of an ``add_argument`` call."""
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [o for o in options if o.startswith("--")]
    chosen = long[0] if long else (options[0] if options else None)
    for keyword in call.keywords:
        if keyword.arg == "dest" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            return keyword.value.value, chosen or keyword.value.value
    if chosen is None:
        return None
    dest = chosen.lstrip("-").replace("-", "_")
    return (dest, chosen) if dest else None


def file_defaults(index: "ModuleIndex") -> tuple[dict[str, list[Default]], dict[str, list[Default]]]:
    """(attribute defaults, module constants) written in one file.

    Attribute defaults: argparse ``add_argument`` defaults by destination, class-level
    fields with a constant value (``num_workers: int = 4`` in a config/dataclass), a
    yacs-style defaults file's top-level ``_C.DATA.NUM_WORKERS = 8`` (by the last name), and
    the keywords of a namespace built in one call (``SimpleNamespace(num_workers=4)``,
    ``EasyDict(...)``, ``OmegaConf.create({...})``'s keys).
    Module constants: top-level ``NAME = constant``.
    """
    attributes: dict[str, list[Default]] = {}
    constants: dict[str, list[Default]] = {}
    name = index.path.replace("\\", "/").rsplit("/", 1)[-1]
    for call in index.nodes_of(ast.Call):
        assert isinstance(call, ast.Call)
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        found = _dest(call)
        dest, option = found if found else (None, "")
        default = keyword_value(call, "default")
        ok, value = _constant(default)
        action = keyword_value(call, "action")
        if default is None and isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
            ok, value = True, action.value == "store_false"
        if dest and ok:
            attributes.setdefault(dest, []).append(Default(value, f"the `{option}` default ({name}:{call.lineno})"))
    for call in index.nodes_of(ast.Call):  # ``parser.set_defaults(pin_mem=True)`` wins over the arguments'
        assert isinstance(call, ast.Call)
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if callee in NAMESPACES:  # ``args = SimpleNamespace(num_workers=4)``
            _namespace_fields(call, callee, name, attributes)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "set_defaults":
            for keyword in call.keywords:
                ok, value = _constant(keyword.value)
                if keyword.arg and ok:
                    attributes[keyword.arg] = [
                        Default(value, f"`set_defaults({keyword.arg}=...)` ({name}:{call.lineno})")
                    ]
    for cls in index.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        for stmt in cls.body:
            target, value = None, None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                target, value = stmt.target.id, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0].id, stmt.value
            ok, constant = _constant(value)
            if target and ok:
                attributes.setdefault(target, []).append(
                    Default(constant, f"the `{cls.name}.{target}` default ({name}:{stmt.lineno})")
                )
    imported = set(index.aliases)  # ``torch.backends.cudnn.benchmark = True`` sets a library, not a config
    namespaces = {stmt.targets[0].id for stmt in index.tree.body  # ``_C = CN()``: a config object built at the top
                  if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(stmt.value, ast.Call)}
    for stmt in index.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            ok, constant = _constant(stmt.value)
            if ok:
                constants.setdefault(stmt.targets[0].id, []).append(
                    Default(constant, f"`{stmt.targets[0].id}` ({name}:{stmt.lineno})")
                )
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _config_chain(stmt.targets[0], namespaces, imported):
            ok, constant = _constant(stmt.value)  # ``_C.DATA.NUM_WORKERS = 8`` (yacs defaults)
            target = stmt.targets[0]
            if ok and isinstance(target, ast.Attribute):
                attributes.setdefault(target.attr, []).append(
                    Default(constant, f"the `{index.dotted(target)}` default ({name}:{stmt.lineno})")
                )
    return attributes, constants


def _namespace_fields(call: ast.Call, callee: str, name: str, attributes: dict[str, list[Default]]) -> None:
    """The constant fields of a namespace built in one call (keywords; ``OmegaConf.create``'s dict keys)."""
    fields: list[tuple[object, ast.expr]] = [(k.arg, k.value) for k in call.keywords if k.arg]
    if callee == "create" and call.args and isinstance(call.args[0], ast.Dict):
        fields += [(k.value, v) for k, v in zip(call.args[0].keys, call.args[0].values)
                   if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    for field, value in fields:
        ok, constant = _constant(value)
        if ok:
            attributes.setdefault(str(field), []).append(Default(constant, f"`{callee}({field}=...)` ({name}:{call.lineno})"))


NAMESPACES = frozenset({"SimpleNamespace", "Namespace", "EasyDict", "edict", "AttrDict", "create"})  # create: OmegaConf.create


def _config_chain(target: ast.AST, namespaces: set[str], imported: set[str]) -> bool:
    """``_C.DATA.NUM_WORKERS`` / ``cfg.TRAIN.LR``: an attribute chain of at least two names off a name of
    the file (not an imported module), or one off a config object it builds at the top (``_C = CN()`` ...
    ``_C.WORKERS = 8``)."""
    depth = 0
    while isinstance(target, ast.Attribute):
        target, depth = target.value, depth + 1
    if not isinstance(target, ast.Name) or target.id in imported:
        return False
    return depth >= 2 or (depth == 1 and target.id in namespaces)


def unique(defaults: list[Default] | None) -> Default | None:
    """The default when every definition agrees on the value, else None."""
    if not defaults:
        return None
    values = {(type(d.value), d.value) for d in defaults}
    return defaults[0] if len(values) == 1 else None
