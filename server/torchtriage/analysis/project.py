"""The project model: several files analysed as one program, purely statically.

Real training code is not one file: the step loop lives in ``train.py`` or
``engine.py`` while the work it calls every step (a loss module's ``forward``,
a matcher, box utilities, a metrics helper) lives elsewhere, and the device is
decided by the entry script.  This module resolves the project's own imports
(absolute, package-relative, ``from x import y``, module aliases) and follows
per-step calls across files:

* ``f(...)`` / ``mod.f(...)`` where ``f`` is a function of another project file;
* ``criterion(out, y)`` / ``self.matcher(out, y)`` / ``model(x)`` where the
  callee is an instance of a project class (found from ``x = Cls(...)`` in the
  same function, ``self.x = Cls(...)``, a factory returning ``Cls(...)``, or,
  failing that, the one project class ever constructed under that name) and
  that class is in another file: its ``forward`` (or ``__call__``) is per-step;
* ``obj.method(...)`` on such an instance: that method is per-step;
* a project function passed as an argument of a per-step call.

A body reached that way is per-step in its own file (see
:class:`.hotloops.HotEntry`) and its findings name the call path.  CUDA use
reaches the files an entry script imports, directly or through other project
files.  Nothing is imported or executed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Iterable

from ..config import Settings
from ..findings import Finding
from .context import ModuleContext
from .defaults import unique
from .engine import analyze_context, enabled_rules, has_file_noqa
from .file_kinds import is_test_file
from .hotloops import HotEntry, HotLoops, find_hot_loops
from .incremental import ParsedModule, parse_module
from .hotloops import _before_starred, unwrap_iterable
from .step_markers import is_backward_call, is_optimizer_step, is_shape_read
from .project_view import LoaderRead, ProjectView, view_of

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_CALLABLE_METHODS = ("forward", "__call__")
_MAX_ROUNDS = 10_000  # hot-entry additions per project: a guard, never reached on real code


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
    ctx: ModuleContext | None  # None when the file does not parse
    parsed: ParsedModule | Finding | None = None
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, attr)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # top-level classes
    functions: dict[str, FunctionNode] = field(default_factory=dict)  # top-level functions
    label: str = ""  # how call paths name the file

    def method(self, cls: ast.ClassDef, name: str) -> FunctionNode | None:
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node
        return None


class Project:
    """A set of files analysed together: cross-file hot entries and CUDA reach, then the rules."""

    def __init__(
        self,
        files: Iterable[tuple[str, str, str]],
        settings: Settings | None = None,
        relative_labels: bool = False,
        parse_cache: dict[str, tuple[str, ParsedModule | Finding]] | None = None,
    ) -> None:
        """``files``: (display path, path relative to the project root, source text) per Python file.

        Call paths name files by display path, or by relative path with ``relative_labels``.
        ``parse_cache`` (display path -> (text, parse)) lets a long-lived caller (the language
        server's index) re-parse only the files whose text changed; it is updated in place."""
        self.settings = settings or Settings()
        self.modules: dict[str, ProjectModule] = {}  # by dotted name
        self.by_path: dict[str, ProjectModule] = {}
        self._suffixes: dict[str, list[ProjectModule]] = {}
        for display, relative, source in files:
            name = module_name(relative)
            cached = parse_cache.get(display) if parse_cache is not None else None
            if cached is not None and cached[0] == source:
                parsed = cached[1]
            else:
                parsed = parse_module(source, display)
                if parse_cache is not None:
                    parse_cache[display] = (source, parsed)
            ctx = None
            if not isinstance(parsed, Finding):
                ctx = ModuleContext(source=source, tree=parsed.tree, path=display, settings=self.settings, parsed=parsed)
            module = ProjectModule(display, name, relative.endswith("__init__.py"), ctx, parsed)
            module.label = relative if relative_labels else display
            if ctx is not None:
                ctx.path_label = module.label
            self.modules.setdefault(name, module)
            self.by_path[display] = module
            parts = name.split(".")
            for start in range(len(parts)):
                self._suffixes.setdefault(".".join(parts[start:]), []).append(module)
        for module in self.by_path.values():
            self._index(module)
        self._share_defaults()
        self._constructed: dict[str, set[tuple[ProjectModule, ast.ClassDef]]] | None = None
        self._entries: dict[ProjectModule, dict[FunctionNode, HotEntry]] = {}
        self._last_hot: dict[ProjectModule, tuple[tuple[HotEntry, ...], HotLoops]] = {}
        self._factories: dict[ast.AST, tuple[ProjectModule, ast.ClassDef] | None] = {}
        self._assignments: dict[ast.AST, dict[str, ast.expr]] = {}  # scope -> name -> last value
        self._solved = False

    # --- indexing ----------------------------------------------------------------------

    def _index(self, module: ProjectModule) -> None:
        if module.ctx is None:
            return
        tree = module.ctx.tree
        for node in tree.body:
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
                base = self._absolute(module, node.module, node.level)
                if base is None:
                    continue
                for alias in node.names:
                    if alias.name != "*":
                        module.imports[alias.asname or alias.name] = (base, alias.name)

    def _share_defaults(self) -> None:
        """Every file sees the argparse/config-class defaults of the whole project, and the
        constants it imports from project files (see :mod:`.defaults`)."""
        merged: dict[str, list] = {}
        for module in self.by_path.values():
            if module.ctx is not None and not is_test_file(module.path):
                for key, found in module.ctx.own_defaults[0].items():
                    merged.setdefault(key, []).extend(found)
        for module in self.by_path.values():
            if module.ctx is None:
                continue
            module.ctx.project_defaults = merged
            for local, (source, attr) in module.imports.items():
                owner = self.find_module(source, module) if attr is not None else None
                if owner is not None and owner is not module and owner.ctx is not None:
                    constant = unique(owner.ctx.own_defaults[1].get(attr))  # type: ignore[arg-type]
                    if constant is not None:
                        module.ctx.imported_constants[local] = constant

    def _absolute(self, module: ProjectModule, name: str | None, level: int) -> str | None:
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
        if exact is not None:
            return exact
        candidates = self._suffixes.get(name, [])
        if len(candidates) == 1:
            return candidates[0]
        if candidates and near is not None:
            def shared(m: ProjectModule) -> int:
                a, b = m.name.split("."), near.name.split(".")
                count = 0
                while count < min(len(a), len(b)) and a[count] == b[count]:
                    count += 1
                return count

            best = max(candidates, key=shared)
            if sum(1 for c in candidates if shared(c) == shared(best)) == 1:
                return best
        return None

    def _symbol(self, module: ProjectModule, name: str, depth: int = 0) -> tuple[ProjectModule, ast.AST] | ProjectModule | None:
        """What ``name`` is in ``module``: a (module, function/class) pair, a project module, or None."""
        if depth > 4:
            return None
        if name in module.functions:
            return module, module.functions[name]
        if name in module.classes:
            return module, module.classes[name]
        target = module.imports.get(name)
        if target is None:
            return None
        source, attr = target
        if attr is None:
            return self.find_module(source, module)
        owner = self.find_module(source, module)
        if owner is not None and owner is not module:
            found = self._symbol(owner, attr, depth + 1)
            if found is not None:
                return found
        return self.find_module(f"{source}.{attr}", module)  # ``from pkg import submodule``

    def _resolve_dotted(self, module: ProjectModule, node: ast.AST) -> tuple[ProjectModule, ast.AST] | ProjectModule | None:
        """A Name/Attribute chain resolved through the project's imports."""
        if isinstance(node, ast.Name):
            return self._symbol(module, node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve_dotted(module, node.value)
            if isinstance(base, ProjectModule):
                return self._symbol(base, node.attr) or self.find_module(f"{base.name}.{node.attr}", base)
        return None

    def _class_of_value(self, module: ProjectModule, value: ast.AST, depth: int = 0) -> tuple[ProjectModule, ast.ClassDef] | None:
        """The project class an expression constructs: ``Cls(...)``, or a project factory whose
        ``return`` constructs one (``build_matcher(args)``)."""
        if not isinstance(value, ast.Call) or depth > 2:
            return None
        target = self._resolve_dotted(module, value.func)
        if not isinstance(target, tuple):
            return None
        owner, node = target
        if isinstance(node, ast.ClassDef):
            return owner, node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and owner.ctx is not None:
            if node in self._factories:
                return self._factories[node]
            self._factories[node] = None  # (recursion guard)
            found: set[tuple[ProjectModule, ast.ClassDef]] = set()
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    expr = ret.value
                    if isinstance(expr, ast.Name):
                        expr = _assigned_value(node, expr.id, self._assignments) or expr
                    cls = self._class_of_value(owner, expr, depth + 1)
                    if cls is not None:
                        found.add(cls)
            result = next(iter(found)) if len(found) == 1 else None
            self._factories[node] = result
            return result
        return None

    @property
    def constructed(self) -> dict[str, set[tuple[ProjectModule, ast.ClassDef]]]:
        """Variable or attribute name -> project classes ever constructed into it."""
        if self._constructed is None:
            table: dict[str, set[tuple[ProjectModule, ast.ClassDef]]] = {}
            for module in self.by_path.values():
                if module.ctx is None or is_test_file(module.path):
                    continue
                for node in module.ctx.nodes_of((ast.Assign, ast.AnnAssign)):
                    value = getattr(node, "value", None)
                    if not isinstance(value, ast.Call):
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
                    names = [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
                    if not names:
                        continue
                    cls = self._class_of_value(module, value)
                    if cls is not None:
                        for name in names:
                            table.setdefault(name, set()).add(cls)
            self._constructed = table
        return self._constructed

    # --- call resolution -------------------------------------------------------------------

    def _instance_class(self, module: ProjectModule, name: str, at: ast.AST) -> tuple[ProjectModule, ast.ClassDef] | None:
        """The project class of the instance a name holds at ``at``."""
        assert module.ctx is not None
        scope = module.ctx.enclosing_function(at) or module.ctx.tree
        value = _assigned_value(scope, name, self._assignments)
        if value is None and scope is not module.ctx.tree:
            value = _assigned_value(module.ctx.tree, name, self._assignments)
        if value is not None:
            return self._class_of_value(module, value)
        return self._by_name(name)

    def _by_name(self, name: str) -> tuple[ProjectModule, ast.ClassDef] | None:
        classes = self.constructed.get(name, set())
        return next(iter(classes)) if len(classes) == 1 else None

    def _self_attribute_class(self, module: ProjectModule, cls: ast.ClassDef, attr: str) -> tuple[ProjectModule, ast.ClassDef] | None:
        """The class of ``self.attr``: from ``self.attr = Cls(...)`` in the class, or an ``__init__``
        parameter stored there whose name was constructed somewhere in the project."""
        for node in ast.walk(cls):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute) and target.attr == attr
                    and isinstance(target.value, ast.Name) and target.value.id == "self"
                ):
                    if isinstance(node.value, ast.Call):
                        return self._class_of_value(module, node.value)
                    if isinstance(node.value, ast.Name):
                        return self._by_name(node.value.id) or self._by_name(attr)
        return None

    def callees(self, module: ProjectModule, call: ast.Call) -> list[tuple[ProjectModule, FunctionNode]]:
        """The functions of *other* project files a call runs."""
        assert module.ctx is not None
        found: list[tuple[ProjectModule, FunctionNode]] = []
        func = call.func
        target = self._resolve_dotted(module, func)
        if isinstance(target, tuple) and isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(target)  # type: ignore[arg-type]
        elif target is None and isinstance(func, ast.Name) and func.id not in module.ctx.functions:
            cls = self._instance_class(module, func.id, call)
            if cls is not None:
                found.extend(_callable_methods(*cls))
        elif target is None and isinstance(func, ast.Attribute):
            receiver = func.value
            cls = None
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                owner = _owner_class(module.ctx, call)
                if owner is not None and module.method(owner, func.attr) is None:
                    cls = self._self_attribute_class(module, owner, func.attr)
                    if cls is not None:
                        found.extend(_callable_methods(*cls))
                cls = None
            elif isinstance(receiver, ast.Name):
                cls = self._instance_class(module, receiver.id, call)
            elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
                owner = _owner_class(module.ctx, call)
                if owner is not None:
                    cls = self._self_attribute_class(module, owner, receiver.attr)
            if cls is not None:
                method = cls[0].method(cls[1], func.attr)
                if method is not None:
                    found.append((cls[0], method))
        for arg in call.args:  # a project function handed on to be called (``optimizer.step(closure)``)
            passed = self._resolve_dotted(module, arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
            if isinstance(passed, tuple) and isinstance(passed[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(passed)  # type: ignore[arg-type]
        return [(m, f) for m, f in found if m is not module and m.ctx is not None and not is_test_file(m.path)]

    # --- solving -------------------------------------------------------------------------

    def _hot(self, module: ProjectModule) -> HotLoops:
        """The module's hot loops with its current entries (kept for the rules when final)."""
        assert module.ctx is not None
        entries = tuple(self._entries.get(module, {}).values())
        hot = find_hot_loops(module.ctx, entries)
        self._last_hot[module] = (entries, hot)
        return hot

    def solve(self) -> None:
        """Propagate per-step calls across files until nothing new is reached, then CUDA reach."""
        if self._solved:
            return
        self._solved = True
        pending = [m for m in self.by_path.values() if m.ctx is not None]
        rounds = 0
        while pending and rounds < _MAX_ROUNDS:
            module = pending.pop(0)
            hot = self._hot(module)
            for call, region in hot.nodes(ast.Call):
                targets = self.callees(module, call)
                if not targets:
                    continue
                chain = region.hot_path + (f"{module.label}:{call.lineno}",)
                for target_module, func in targets:
                    known = self._entries.setdefault(target_module, {})
                    batch = _step_data_params(module, call, region, func)
                    entry = known.get(func)
                    if entry is not None and batch <= entry.batch:
                        continue
                    rounds += 1
                    if entry is None:
                        known[func] = HotEntry(func, frozenset(batch), chain)
                    else:  # another per-step call site hands it step data too: merge
                        known[func] = HotEntry(func, entry.batch | batch, entry.hot_path)
                    if target_module not in pending:
                        pending.append(target_module)
        for module, entries in self._entries.items():
            assert module.ctx is not None
            module.ctx.hot_entries = tuple(entries.values())
            module.ctx.__dict__.pop("hot", None)
        for module, (entries_used, hot) in self._last_hot.items():
            assert module.ctx is not None
            if entries_used == module.ctx.hot_entries:  # computed with the final entries: reuse
                module.ctx.__dict__["hot"] = hot
        self._last_hot.clear()
        self._propagate_cuda()
        self._link_loaders()

    def _link_loaders(self) -> None:
        """Loaders handed to another file's function whose step loop iterates that parameter."""
        from .rules._loaders import moves_data_to_device

        for module in self.by_path.values():
            if module.ctx is None:
                continue
            reads: list[LoaderRead] = []
            trains_via: str | None = None
            for call in module.ctx.nodes_of(ast.Call):
                assert isinstance(call, ast.Call)
                passed = [(i, a.id) for i, a in enumerate(call.args) if isinstance(a, ast.Name)]
                named = [(k.arg, k.value.id) for k in call.keywords if k.arg and isinstance(k.value, ast.Name)]
                if not (passed or named) and trains_via is not None:
                    continue
                target = self._resolve_dotted(module, call.func)
                if not isinstance(target, tuple) or not isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                owner, func = target
                if owner is module or owner.ctx is None or is_test_file(owner.path):
                    continue
                params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
                by_param = {params[i]: name for i, name in passed if i < len(params)}
                by_param.update({k: name for k, name in named})
                for region in owner.ctx.hot.step_loops:
                    loop = region.node
                    if owner.ctx.enclosing_function(loop) is not func:
                        continue
                    if trains_via is None and self._trains(owner, region):
                        trains_via = f"{owner.label}:{loop.lineno}"
                    if not isinstance(loop, (ast.For, ast.AsyncFor)):
                        continue
                    iterated = _iterated_name(loop.iter, by_param)
                    if iterated is not None:
                        moves = moves_data_to_device(owner.ctx, [region])
                        reads.append(
                            LoaderRead(by_param[iterated], call.lineno, call.col_offset, moves, f"{owner.label}:{loop.lineno}")
                        )
            module.ctx.loader_reads = tuple(reads)
            module.ctx.trains_via = trains_via

    def _propagate_cuda(self) -> None:
        """A file imported (directly or through project files) by a file that uses CUDA runs on it."""
        if self.settings.device in ("cuda", "cpu"):
            return
        queue = [m for m in self.by_path.values() if m.ctx is not None and m.ctx.mentions_cuda and not is_test_file(m.path)]
        origin = {m: m.path for m in queue}
        while queue:
            module = queue.pop(0)
            for target in self._imported(module):
                if target not in origin:
                    origin[target] = origin[module]
                    queue.append(target)
        for module, source in origin.items():
            if module.ctx is not None and not module.ctx.mentions_cuda:
                module.ctx.cuda_from = source
                module.ctx.__dict__.pop("uses_cuda", None)

    def _trains(self, module: ProjectModule, region) -> bool:  # type: ignore[no-untyped-def]
        """Whether a step loop trains: itself, or through a per-step call into another project
        file that runs backward or steps an optimizer (``loss_scaler(loss, optimizer)``)."""
        if region.trains:
            return True
        assert module.ctx is not None
        for call, owner in module.ctx.hot.nodes(ast.Call):
            if owner is not region:
                continue
            for _target, func in self.callees(module, call):
                if any(is_backward_call(n) or is_optimizer_step(n) for n in ast.walk(func)):
                    return True
        return False

    def _imported(self, module: ProjectModule) -> list[ProjectModule]:
        found: dict[ProjectModule, None] = {}
        for source, attr in module.imports.values():
            owner = self.find_module(source, module)
            if attr is not None:
                sub = self.find_module(f"{source}.{attr}", module) if owner is None or attr not in owner.classes | owner.functions else None
                if sub is not None:
                    found[sub] = None
            if owner is not None:
                found[owner] = None
        found.pop(module, None)
        return list(found)

    # --- results ----------------------------------------------------------------------------

    def context(self, path: str) -> ModuleContext | None:
        """The solved context of one file (its cross-file hot entries and CUDA reach set)."""
        self.solve()
        module = self.by_path.get(path)
        return module.ctx if module is not None else None

    def view(self, path: str) -> ProjectView | None:
        """The facts the rest of the project contributes to one file, by name (see :mod:`.project_view`)."""
        ctx = self.context(path)
        if ctx is None:
            return None
        view = view_of(ctx)
        own = {k: v for k, v in ctx.own_defaults[0].items()}
        if ctx.project_defaults is not None and ctx.project_defaults == own:
            view = replace(view, defaults=None)  # nothing from other files: as if alone
        if not (view.entries or view.cuda_from or view.imported_constants or view.defaults is not None or view.loader_reads
                or view.trains_via):
            return None  # the file analysed alone gives the same findings
        return view

    def analyze(self, path: str, rules=None) -> list[Finding]:  # type: ignore[no-untyped-def]
        """All findings for one file of the project, as :func:`.engine.analyze_parsed` gives them."""
        module = self.by_path[path]
        if module.ctx is None:
            return [module.parsed] if isinstance(module.parsed, Finding) else []
        if has_file_noqa(module.ctx.source):
            return []
        ctx = self.context(path)
        assert ctx is not None
        selected = list(rules) if rules is not None else enabled_rules(self.settings, path)
        findings = analyze_context(ctx, selected)
        unique = {(f.code, f.span): f for f in findings}
        return sorted(unique.values(), key=Finding.sort_key)


def _callable_methods(module: ProjectModule, cls: ast.ClassDef) -> list[tuple[ProjectModule, FunctionNode]]:
    found = []
    for name in _CALLABLE_METHODS:
        method = module.method(cls, name)
        if method is not None:
            found.append((module, method))
            break
    return found


def _owner_class(ctx: ModuleContext, node: ast.AST) -> ast.ClassDef | None:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.ClassDef):
            return ancestor
    return None


def _assigned_value(
    scope: ast.AST, name: str, cache: dict[ast.AST, dict[str, ast.expr]] | None = None
) -> ast.expr | None:
    """The value last assigned to a plain name directly in a scope (not nested scopes)."""
    table = cache.get(scope) if cache is not None else None
    if table is None:
        table = _scope_assignments(scope)
        if cache is not None:
            cache[scope] = table
    return table.get(name)


def _scope_assignments(scope: ast.AST) -> dict[str, ast.expr]:
    """Plain name -> the value of its last (by line) assignment directly in a scope."""
    best: dict[str, tuple[int, ast.expr]] = {}
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and node.lineno > best.get(target.id, (-1, None))[0]:
                    best[target.id] = (node.lineno, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if node.lineno > best.get(node.target.id, (-1, None))[0]:
                best[node.target.id] = (node.lineno, node.value)
        stack.extend(ast.iter_child_nodes(node))
    return {name: value for name, (_, value) in best.items()}


_HOST_READS = frozenset({"item", "tolist", "float", "int", "bool"})


def _is_host_value(module: ProjectModule, expr: ast.AST, at: ast.AST) -> bool:
    """A Python number read from the device (``loss.item()``, ``float(acc)``), directly or
    through a name assigned from one: no step tensor is passed on."""
    assert module.ctx is not None
    if isinstance(expr, ast.Name):
        scope = module.ctx.enclosing_function(at) or module.ctx.tree
        value = _assigned_value(scope, expr.id)
        if value is None:
            return False
        expr = value
    if not isinstance(expr, ast.Call):
        return False
    name = expr.func.attr if isinstance(expr.func, ast.Attribute) else getattr(expr.func, "id", None)
    return name in _HOST_READS


def _step_data_params(module: ProjectModule, call: ast.Call, region, func: FunctionNode) -> set[str]:  # type: ignore[no-untyped-def]
    """The callee's parameters that receive step data (batch-derived values that are not shapes or
    host numbers) at this call; a ``**kwargs`` parameter when a keyword or ``**dict`` does."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args] if a.arg not in ("self", "cls")]
    keyword_params = set(params) | {a.arg for a in func.args.kwonlyargs}
    spread = func.args.kwarg.arg if func.args.kwarg is not None else None

    def carries(arg: ast.AST) -> bool:
        return bool(_names(arg) & region.batch_names) and not is_shape_read(arg) and not _is_host_value(module, arg, call)

    batch = {p for p, arg in zip(params, _before_starred(call.args)) if carries(arg)}
    for keyword in call.keywords:
        if not carries(keyword.value):
            continue
        if keyword.arg in keyword_params:
            batch.add(keyword.arg)  # type: ignore[arg-type]
        elif spread is not None:
            batch.add(spread)
    return batch


def _iterated_name(iterable: ast.expr, wanted: dict[str, str]) -> str | None:
    """The parameter a loop iterates: ``loader``, ``enumerate(tqdm(loader))``, or a wrapper
    taking it first (``metric_logger.log_every(loader, 10, header)``)."""
    name = _last_name(unwrap_iterable(iterable))
    if name in wanted:
        return name
    node: ast.expr = iterable
    for _ in range(4):
        if not (isinstance(node, ast.Call) and node.args):
            return None
        node = node.args[0]
        if isinstance(node, ast.Name) and node.id in wanted:
            return node.id
    return None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
