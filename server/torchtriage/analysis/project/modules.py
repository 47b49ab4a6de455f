"""The files of a project and what their names refer to, through the project's own imports.

A :class:`ModuleTable` knows every Python file of the project by dotted module
name and resolves imports the way Python would from the project root: absolute,
package-relative, ``from x import y``, module aliases, and a project root that is
not the import root (a file is also found by the tail of its dotted name).
Nothing is imported or executed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

from ...findings import Finding
from ..context import ModuleContext
from ..file_kinds import is_test_file
from ..incremental.reparse import ParsedModule

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
Symbol = tuple["ProjectModule", ast.AST]  # a function or class of a project file


def module_name(relative_path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = list(PurePosixPath(relative_path.replace("\\", "/")).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(eq=False)
class ProjectModule:
    """One Python file of the project."""

    path: str  # the display path findings carry
    name: str  # dotted module name from the project root
    is_package: bool
    # None when the file does not parse; syntax-only while the project is solved, then the
    # context the rules get (see :meth:`.program.Project.solve`)
    ctx: ModuleContext | None
    parsed: ParsedModule | Finding | None = None
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, attr)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # top-level classes
    functions: dict[str, FunctionNode] = field(default_factory=dict)  # top-level functions
    label: str = ""  # how call paths name the file
    star_imports: list[str] = field(default_factory=list)  # modules it imports everything from (``from utils import *``)
    exports: frozenset[str] | None = None  # the names its ``__all__`` lists (None: no literal ``__all__``)

    @cached_property
    def is_test(self) -> bool:
        """A test module (``file_kinds.is_test_file``, judged on its source when it parses)."""
        return is_test_file(self.path, self.ctx.source if self.ctx is not None else None)

    def method(self, cls: ast.ClassDef, name: str) -> FunctionNode | None:
        """A method defined in the class body itself."""
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node
        return None


class ModuleTable:
    """Every file of a project by module name and path, and name resolution across them."""

    def __init__(self) -> None:
        self.modules: dict[str, ProjectModule] = {}  # by dotted name (the first file wins)
        self.by_path: dict[str, ProjectModule] = {}
        self._suffixes: dict[str, list[ProjectModule]] = {}

    def add(self, module: ProjectModule) -> None:
        self.modules.setdefault(module.name, module)
        self.by_path[module.path] = module
        parts = module.name.split(".")
        for start in range(len(parts)):
            self._suffixes.setdefault(".".join(parts[start:]), []).append(module)

    def index(self, module: ProjectModule) -> None:
        """Record a parsed file's top-level classes and functions and its imports."""
        if module.ctx is None:
            return
        for node in module.ctx.tree.body:
            if isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
        for node in module.ctx.nodes_of((ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.imports[alias.asname] = (alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        module.imports.setdefault(top, (top, None))
            elif isinstance(node, ast.ImportFrom):
                base = self.absolute(module, node.module, node.level)
                if base is None:
                    continue
                for alias in node.names:
                    if alias.name != "*":
                        module.imports[alias.asname or alias.name] = (base, alias.name)
                    elif base not in module.star_imports:
                        module.star_imports.append(base)
        module.exports = _exports(module.ctx.tree)

    def absolute(self, module: ProjectModule, name: str | None, level: int) -> str | None:
        """The dotted name ``from <level dots><name> import ...`` refers to in ``module`` (None: above the root)."""
        if level == 0:
            return name
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        if level - 1 > len(package):
            return None
        base = package[: len(package) - (level - 1)]
        return ".".join([*base, *([name] if name else [])])

    def find_module(self, name: str, near: ProjectModule | None = None) -> ProjectModule | None:
        """The project file for a dotted module name: exact, else the one file whose dotted path
        ends with it (the project root need not be the import root), nearest ``near`` first."""
        exact = self.modules.get(name)
        candidates = self._suffixes.get(name, [])
        if exact is not None:
            if near is not None and any(c is not exact for c in candidates):  # a copy of the package beside ``near``
                return _from_enclosing_root([exact, *(c for c in candidates if c is not exact)], name, near) or exact
            return exact
        if len(candidates) == 1:
            return candidates[0]
        if candidates and near is not None:
            def shared(m: ProjectModule) -> int:
                return shared_prefix(m, near)

            best = max(candidates, key=shared)
            if sum(1 for c in candidates if shared(c) == shared(best)) == 1:
                return best
            return _from_enclosing_root(candidates, name, near) or _package_over_its_module(candidates)
        return None

    def symbol(self, module: ProjectModule, name: str, depth: int = 0) -> Symbol | ProjectModule | None:
        """What ``name`` is in ``module``: a (module, function/class) pair, a project module, or None."""
        if depth > 4:
            return None
        if name in module.functions:
            return module, module.functions[name]
        if name in module.classes:
            return module, module.classes[name]
        target = module.imports.get(name)
        if target is None:
            return self._star_symbol(module, name, depth)
        source, attr = target
        if attr is None:
            return self.find_module(source, module)
        owner = self.find_module(source, module)
        if owner is not None and owner is not module:
            found = self.symbol(owner, attr, depth + 1)
            if found is not None:
                return found
        submodule = self.find_module(f"{source}.{attr}", module)  # ``from pkg import submodule``
        return submodule if submodule is not None else self._defining(source, attr, (module, owner), depth)

    def _defining(self, source: str, name: str, skip: tuple[ProjectModule | None, ...], depth: int) -> Symbol | None:
        """``from data import AudioDataLoader`` run with a folder on ``sys.path`` (``src/data/data.py`` beside the
        package ``src/data/``): the one other file of that module name that defines the name."""
        found = [s for m in self._suffixes.get(source, []) if m not in skip
                 and isinstance(s := self.symbol(m, name, depth + 1), tuple)]
        return found[0] if len(found) == 1 else None

    def _star_symbol(self, module: ProjectModule, name: str, depth: int) -> Symbol | ProjectModule | None:
        """``name`` from a project module the file imports everything from (``from utils import *``):
        what that module defines or imports itself, unless it names its exports (``__all__``) without it."""
        for source in module.star_imports:
            owner = self.find_module(source, module)
            if owner is None or owner is module or (owner.exports is not None and name not in owner.exports):
                continue
            found = self.symbol(owner, name, depth + 1)
            if isinstance(found, tuple):
                return found
        return None

    def resolve_dotted(self, module: ProjectModule, node: ast.AST) -> Symbol | ProjectModule | None:
        """A Name/Attribute chain resolved through the project's imports."""
        if isinstance(node, ast.Name):
            return self.symbol(module, node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_dotted(module, node.value)
            if isinstance(base, ProjectModule):
                return self.symbol(base, node.attr) or self.find_module(f"{base.name}.{node.attr}", base)
        return None

    def find_method(self, module: ProjectModule, cls: ast.ClassDef, name: str, depth: int = 0) -> tuple[ProjectModule, FunctionNode] | None:
        """The method ``name`` an instance of ``cls`` runs: its own, else the first a project base class
        defines (depth first, left to right: the MRO of the single-inheritance code this reads)."""
        method = module.method(cls, name)
        if method is not None:
            return module, method
        if depth > 4:
            return None
        for base in cls.bases:
            target = self.resolve_dotted(module, base)
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef) and target[1] is not cls:
                found = self.find_method(target[0], target[1], name, depth + 1)
                if found is not None:
                    return found
        return None

    def dict_literal(self, module: ProjectModule, node: ast.AST, depth: int = 0) -> tuple[ProjectModule, ast.Dict] | None:
        """The module-level dict literal a Name/Attribute names (``train_factory`` for ``train_factory = {"ctdet":
        CtdetTrainer, ...}``, in this file or imported from another project file), with the file that holds it."""
        if depth > 4:
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve_dotted(module, node.value)
            return self.dict_literal(base, ast.Name(node.attr), depth + 1) if isinstance(base, ProjectModule) else None
        if not isinstance(node, ast.Name) or module.ctx is None:
            return None
        for statement in module.ctx.tree.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Dict) \
                    and any(isinstance(t, ast.Name) and t.id == node.id for t in statement.targets):
                return module, statement.value
        source, attr = module.imports.get(node.id, (None, None))
        owner = self.find_module(source, module) if source is not None and attr is not None else None
        return self.dict_literal(owner, ast.Name(attr), depth + 1) if owner is not None and owner is not module else None

    def resolve_function(self, module: ProjectModule, node: ast.AST) -> tuple[ProjectModule, FunctionNode] | None:
        """A Name/Attribute chain that names a project function."""
        target = self.resolve_dotted(module, node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if isinstance(target, tuple) and isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return target[0], target[1]
        return None

    def imported(self, module: ProjectModule) -> list[ProjectModule]:
        """The other project files a file imports."""
        found: dict[ProjectModule, None] = {}
        for source, attr in module.imports.values():
            owner = self.find_module(source, module)
            if attr is not None:
                sub = self.find_module(f"{source}.{attr}", module) if owner is None or attr not in owner.classes | owner.functions else None
                if sub is not None:
                    found[sub] = None
            if owner is not None:
                found[owner] = None
        for source in module.star_imports:
            owner = self.find_module(source, module)
            if owner is not None:
                found[owner] = None
        found.pop(module, None)
        return list(found)


def _exports(tree: ast.Module) -> frozenset[str] | None:
    """The names a literal top-level ``__all__ = [...]`` lists (None when there is none)."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))):
            return frozenset(e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return None


def _package_over_its_module(candidates: list[ProjectModule]) -> ProjectModule | None:
    """A package and modules inside it that all end with the same name (``src/util/__init__.py`` and
    ``src/util/util.py`` for ``import util``, with ``src`` put on the path by the script): the package,
    since the other would need the package's own folder on the path."""
    package = min(candidates, key=lambda c: c.name.count("."))
    if package.is_package and all(c is package or c.name.startswith(package.name + ".") for c in candidates):
        return package
    return None


def _from_enclosing_root(candidates: list[ProjectModule], name: str, near: ProjectModule) -> ProjectModule | None:
    """Of files whose dotted paths end with ``name``, the one whose import root (the folder ``name`` is
    imported from) holds ``near``, the innermost such root: ``from data_provider.data_factory import ...`` in
    ``sub/exp/main.py`` is ``sub/data_provider/data_factory.py``, not ``sub/other/data_provider/...`` (a script
    run from ``sub/`` has ``sub`` on its path)."""
    own_folder = near.name.rpartition(".")[0] + "." if "." in near.name else ""
    inside = [c for c in candidates if c is not near and near.name.startswith(root := c.name[: len(c.name) - len(name)])
              and (root != own_folder or not root)]  # Python 3 imports nothing from the importer's own folder by that name
    if not inside:
        return None
    deepest = max(len(c.name) for c in inside)
    innermost = [c for c in inside if len(c.name) == deepest]
    return innermost[0] if len(innermost) == 1 else None


def shared_prefix(a: ProjectModule, b: ProjectModule) -> int:
    """How many leading parts of their dotted names two files share (``x.util.misc`` and ``x.engine``: 1)."""
    first, second = a.name.split("."), b.name.split(".")
    count = 0
    while count < min(len(first), len(second)) and first[count] == second[count]:
        count += 1
    return count
