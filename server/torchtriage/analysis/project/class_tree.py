"""The project's classes and their subclasses, each class's bases resolved once.

Read by the call graph's model methods (:mod:`.model_methods`: which classes are ``nn.Module`` classes) and
overrides (:mod:`.overrides`: which subclasses implement an abstract method).  Test files are left out.
"""

from __future__ import annotations

import ast

from .modules import ModuleTable, ProjectModule

ClassRef = tuple[ProjectModule, ast.ClassDef]


class ClassTree:
    """``classes``: the project's top-level classes, file by file; ``children``: a class's direct subclasses."""

    def __init__(self, table: ModuleTable) -> None:
        self.table = table
        self._classes: list[ClassRef] | None = None
        self._children: dict[ast.ClassDef, list[ClassRef]] = {}

    def classes(self) -> list[ClassRef]:
        if self._classes is None:
            self._classes = [(m, cls) for m in self.table.by_path.values() if m.ctx is not None and not m.is_test
                             for cls in m.classes.values()]
            for module, cls in self._classes:
                for base in cls.bases:
                    target = self.table.resolve_dotted(module, base)
                    if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef) and target[1] is not cls:
                        self._children.setdefault(target[1], []).append((module, cls))
        return self._classes

    def children(self, cls: ast.ClassDef) -> list[ClassRef]:
        self.classes()
        return self._children.get(cls, [])

    def below(self, roots: list[ast.ClassDef]) -> set[ast.ClassDef]:
        """``roots`` and every class that derives from one of them."""
        found = set(roots)
        frontier = list(roots)
        while frontier:
            frontier = [child for parent in frontier for _, child in self.children(parent) if child not in found]
            found.update(frontier)
        return found
