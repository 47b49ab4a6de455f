"""The part of a project a run executes: the files named and the project files they import, transitively.

``torchtriage check FILE`` analyses the file within its whole project, since any
other file may call into it once per step.  A profile or an analysed trace ran
one program, though: its script and what that script imports.  Solving only
that part gives the same findings for the files that ran (their callers that
matter are in it) and costs what the program costs, not what the repository
costs (a 500-file repository took 10 s to solve for a one-file script).
Nothing is imported or executed: imports are read from the syntax, resolved
the way :class:`.modules.ModuleTable` resolves them.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Iterable

from .modules import ModuleTable, ProjectModule, module_name


def _parents(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``: the packages whose ``__init__`` runs first."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _imported_names(table: ModuleTable, module: ProjectModule, tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names += [*_parents(alias.name), alias.name]
        elif isinstance(node, ast.ImportFrom):
            base = table.absolute(module, node.module, node.level)
            if base is None:
                continue
            names += [*_parents(base), base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]
    return names


def import_closure(root: Path, files: Iterable[Path], seeds: Iterable[Path]) -> list[Path]:
    """``seeds`` and every file of ``files`` (the project under ``root``) they import, transitively, in
    the order of ``files``; a seed outside ``files`` is kept as it is."""
    table = ModuleTable()
    path_of: dict[int, Path] = {}
    by_file: dict[Path, ProjectModule] = {}
    root = root.resolve()
    prefix = str(root).rstrip(os.sep) + os.sep
    # ``files`` are walked from the resolved root: absolute already, so no per-file ``resolve()``
    # (a system call per path component: 80 ms for a 1,000-file repository around a one-file script).
    ordered = [file if file.is_absolute() else file.resolve() for file in files]
    for file in ordered:
        text = str(file)
        relative = text[len(prefix):].replace(os.sep, "/") if text.startswith(prefix) else file.name
        module = ProjectModule(str(file), module_name(relative), relative.endswith("__init__.py"), None)
        table.add(module)
        path_of[id(module)] = file
        by_file[file] = module
    kept: set[Path] = set()
    extra = [seed.resolve() for seed in seeds if seed.resolve() not in by_file]
    queue = [by_file[seed.resolve()] for seed in seeds if seed.resolve() in by_file]
    while queue:
        module = queue.pop()
        path = path_of[id(module)]
        if path in kept:
            continue
        kept.add(path)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
        except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
            continue
        for name in _imported_names(table, module, tree):
            found = table.find_module(name, module)
            if found is not None and path_of[id(found)] not in kept:
                queue.append(found)
    return [file for file in ordered if file in kept] + extra
