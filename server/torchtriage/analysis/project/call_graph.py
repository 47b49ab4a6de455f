"""Which functions of other project files a call runs, for the training-code shape.

* ``f(...)`` / ``mod.f(...)`` where ``f`` is a function of another project file;
* ``criterion(out, y)`` / ``self.matcher(out, y)`` / ``model(x)`` where the callee is
  an instance of a project class (found from ``x = Cls(...)`` in the same function,
  ``self.x = Cls(...)``, a factory returning ``Cls(...)``, or, failing that, the one
  project class ever constructed under that name): its ``forward`` (or ``__call__``);
* ``obj.method(...)`` on such an instance: that method;
* ``self.attn(x)`` where the instance's class is in the caller's own file: its ``forward``;
* ``for blk in self.blocks: x = blk(x)`` and ``self.stem(x)`` (a ``Sequential``): the ``forward`` of the
  classes the container holds (:mod:`.containers`);
* an instance built by name from a registry (:mod:`.registries`): each registered class;
* a project function passed as an argument of the call (``optimizer.step(closure)``).

Test files are never callees.  Nothing is imported or executed.
"""

from __future__ import annotations

import ast

from ..context import ModuleContext
from ..hotloops.step_markers import SCOPE_NODES
from ..incremental.walks import scope_walk
from .containers import element_values, iterated_attribute, self_attribute
from .class_tree import ClassTree
from .model_methods import ModelMethods
from .modules import FunctionNode, ModuleTable, ProjectModule, shared_prefix
from .overrides import Overrides, is_abstract
from .registries import RegistryIndex
from ..syntax import assigned_value, assignment_history, parameter_names, picked_from_dict

ClassRef = tuple[ProjectModule, ast.ClassDef]
FunctionRef = tuple[ProjectModule, FunctionNode]
_CALLABLE_METHODS = ("forward", "__call__")
# nn.Module methods that return the module itself.
_SELF_RETURNING = frozenset({"cuda", "to", "train", "eval", "half", "float", "double", "bfloat16", "cpu", "requires_grad_"})


class CallGraph:
    """Resolves calls to project functions; caches what it learns about factories and scopes."""

    def __init__(self, table: ModuleTable) -> None:
        self.table = table
        self.registries = RegistryIndex(table)
        classes = ClassTree(table)  # each class's bases resolved once, for both
        self.model_methods = ModelMethods(classes, _COMMON_METHODS)
        self.overrides = Overrides(classes)
        self._built: dict[ast.AST, list[ClassRef]] = {}  # factory -> the classes its registry lookups may build
        self._elements: dict[tuple[ast.ClassDef, str], list[ClassRef]] = {}  # (class, container attribute) -> element classes
        self._constructed: dict[str, set[ClassRef]] | None = None
        self._constructed_by_module: dict[ProjectModule, dict[str, set[ClassRef]]] = {}
        self._factories: dict[ast.AST, ClassRef | None] = {}
        self._assignments: dict[ast.AST, dict[str, ast.expr]] = {}  # scope -> name -> last value
        self._methods: dict[str, list[FunctionRef]] | None = None  # method name -> project methods
        self._history: dict[ast.AST, dict[str, list[tuple[int, ast.expr]]]] = {}  # scope -> name -> its assignments
        self._typed: dict[ast.AST, tuple[dict[str, list[ast.Assign]], dict[str, list[ast.expr]]]] = {}  # see _scope_typing
        self.memo: dict[tuple[str, ast.AST], object] = {}  # (fact, node) -> what another project module derived once per solve
        self._lookups: dict[ProjectModule, frozenset[str]] = {}  # see _lookup_names

    def assigned(self, module: ProjectModule, name: str, at: ast.AST) -> ast.expr | None:
        """The value last assigned to ``name`` in the function holding ``at`` (or the module)."""
        assert module.ctx is not None
        scope = module.ctx.enclosing_function(at) or module.ctx.tree
        return assigned_value(scope, name, self._assignments)

    def class_of_value(self, module: ProjectModule, value: ast.AST, depth: int = 0) -> ClassRef | None:
        """The project class an expression constructs: ``Cls(...)``, or a project factory whose
        ``return`` constructs one (``build_matcher(args)``)."""
        value = _peeled(value)
        if not isinstance(value, ast.Call) or depth > 2:
            return None
        target = self.table.resolve_dotted(module, value.func)
        if not isinstance(target, tuple):
            return None
        owner, node = target
        if isinstance(node, ast.ClassDef):
            return owner, node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and owner.ctx is not None:
            if node in self._factories:
                return self._factories[node]
            self._factories[node] = None  # (recursion guard)
            found: set[ClassRef] = set()
            for expr in self._returned_values(node):
                cls = self.class_of_value(owner, expr, depth + 1)
                if cls is not None:
                    found.add(cls)
            result = next(iter(found)) if len(found) == 1 else None
            self._factories[node] = result
            return result
        return None

    def _returned_values(self, func: FunctionNode) -> list[ast.expr]:
        """What a function returns (also under calls that return the module itself: ``return net.cuda()``), a
        returned name read as each call assigned to it that does not re-wrap it (a factory's branches:
        ``model = SegModel()`` ... ``elif ...: model = Classifier()`` then ``return model``), else (the last value
        re-wraps it: ``model = DataParallel(model)``) as the value last assigned to it."""
        values = []
        for ret in ast.walk(func):
            if isinstance(ret, ast.Return) and ret.value is not None:
                expr = _peeled(ret.value, through_names=True)
                if isinstance(expr, ast.Name):
                    last = assigned_value(func, expr.id, self._assignments)
                    built = self._built_into(func, expr.id) if last is not None and not _mentions(last, expr.id) else []
                    if built:
                        values.extend(value for value in built if value not in values)
                        continue
                    expr = last or expr
                values.append(expr)
        return values

    def _built_into(self, func: FunctionNode, name: str) -> list[ast.expr]:
        """The calls assigned to ``name`` in ``func`` that do not re-wrap it, by line (called when the last value
        assigned is not a re-wrap: ``model = DataParallel(model)`` returns the wrapper, as before)."""
        history = self._history.get(func)
        if history is None:
            history = self._history[func] = assignment_history(func)
        return [value for _, value in history.get(name, ()) if isinstance(value, ast.Call) and not _mentions(value, name)]

    def built_classes(self, module: ProjectModule, value: ast.AST, depth: int = 0) -> list[ClassRef]:
        """The project classes an expression may construct: the one :meth:`class_of_value` finds, else each
        class a registry lookup may build (:mod:`.registries`: ``ARCH_REGISTRY.get(name)(**opt)``), also
        through project factories that return one (``build_network(opt)``)."""
        single = self.class_of_value(module, value)
        if single is not None:
            return [single]
        value = _peeled(value)
        if not isinstance(value, ast.Call) or depth > 2:
            return []
        registry = self.registries.lookup(value)
        if registry is not None:
            return self._registered_classes(registry)
        keyed = self.keyed_classes(module, value)
        if keyed:
            return keyed
        imported = self._imported_by_name(module, value)
        if imported is not None:
            return imported
        target = self.table.resolve_dotted(module, value.func)
        if not (isinstance(target, tuple) and isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef))):
            return []
        owner, factory = target
        if owner.ctx is None:
            return []
        known = self._built.get(factory)
        if known is None:
            self._built[factory] = []  # (recursion guard)
            found: list[ClassRef] = []
            for expr in self._returned_values(factory):
                found.extend(cls for cls in self.built_classes(owner, expr, depth + 1) if cls not in found)
            known = self._built[factory] = found[:_REGISTRY_CLASSES]
        return known

    def keyed_classes(self, module: ProjectModule, value: ast.Call) -> list[ClassRef]:
        """A class picked by key from a dict literal of project classes: ``train_factory[opt.task](opt, model)``,
        ``Trainer = train_factory[opt.task]`` ... ``Trainer(opt, model)``, ``MODELS.get(name)(...)`` (the dict at
        module level, in this file or imported): each class the dict holds (or a factory it holds builds)."""
        lookup: ast.AST | None = value.func
        if isinstance(lookup, ast.Name):
            if lookup.id not in self._lookup_names(module):
                return []
            lookup = self.assigned(module, lookup.id, value)
        holder = _looked_up_in(lookup)
        if holder is None:
            return []
        found = self.table.dict_literal(module, holder)
        if found is None:
            return []
        owner, table = found
        classes: list[ClassRef] = []
        for entry in table.values:
            target = self.table.resolve_dotted(owner, entry) if isinstance(entry, (ast.Name, ast.Attribute)) else None
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef):
                built: list[ClassRef] | set[ClassRef] = [(target[0], target[1])]
            elif isinstance(target, tuple) and target[0].ctx is not None:
                built = self._returned_classes(target[0], target[1])
            else:
                continue
            classes.extend(cls for cls in built if cls not in classes)
        return classes[:_REGISTRY_CLASSES]

    def _lookup_names(self, module: ProjectModule) -> frozenset[str]:
        """The names the file assigns a lookup to anywhere (``Trainer = TRAINERS[key]``, ``= MODELS.get(key)``)."""
        names = self._lookups.get(module)
        if names is None:
            assigns = module.ctx.nodes_of(ast.Assign) if module.ctx is not None else ()
            names = self._lookups[module] = frozenset(
                t.id for node in assigns if _looked_up_in(node.value) is not None  # type: ignore[attr-defined]
                for t in node.targets if isinstance(t, ast.Name))  # type: ignore[attr-defined]
        return names

    def _imported_by_name(self, module: ProjectModule, value: ast.Call) -> list[ClassRef] | None:
        """``model = importlib.import_module(args.model)`` ... ``model.get_model(n)``: a project module chosen
        by name, so any project class of that name (or built by a function of that name); None: not this shape."""
        func = value.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        holder = self.assigned(module, func.value.id, value)
        if not (isinstance(holder, ast.Call) and (module.ctx.qualname(holder.func) if module.ctx else None)  # type: ignore[union-attr]
                in ("importlib.import_module", "__import__", "builtins.__import__")):
            return None
        found: list[ClassRef] = []
        for owner in self.table.by_path.values():
            if owner.ctx is None or owner.is_test or _in_run_output(owner.path):
                continue
            if func.attr in owner.classes:
                found.append((owner, owner.classes[func.attr]))
            elif func.attr in owner.functions:
                found.extend(cls for cls in self._returned_classes(owner, owner.functions[func.attr]) if cls not in found)
        return found[:_REGISTRY_CLASSES]

    def _returned_classes(self, owner: ProjectModule, func: FunctionNode) -> set[ClassRef]:
        """The project classes a factory's ``return`` statements construct (one level: no registries)."""
        return {cls for expr in self._returned_values(func) if (cls := self.class_of_value(owner, expr, 1)) is not None}

    def _registered_classes(self, registry: str) -> list[ClassRef]:
        """The classes registered with ``registry``, and those its registered factories construct."""
        found: list[ClassRef] = []
        for owner, node in self.registries.registered(registry):
            if isinstance(node, ast.ClassDef):
                cls: ClassRef | None = (owner, node)
            else:
                built = self._returned_classes(owner, node)
                cls = next(iter(built)) if len(built) == 1 else None
            if cls is not None and cls not in found:
                found.append(cls)
        return found[:_REGISTRY_CLASSES]

    @property
    def constructed(self) -> dict[str, set[ClassRef]]:
        """Variable or attribute name -> project classes ever constructed into it."""
        if self._constructed is None:
            table: dict[str, set[ClassRef]] = {}
            for module in self.table.by_path.values():
                for name, classes in self._constructed_in(module).items():
                    table.setdefault(name, set()).update(classes)
            self._constructed = table
        return self._constructed

    def _constructed_in(self, module: ProjectModule) -> dict[str, set[ClassRef]]:
        """Variable or attribute name -> project classes constructed into it in one (non-test) module."""
        table = self._constructed_by_module.get(module)
        if table is None:
            table = self._constructed_by_module[module] = {}
            for node in module.ctx.nodes_of((ast.Assign, ast.AnnAssign)) if module.ctx is not None and not module.is_test else ():
                value = getattr(node, "value", None)
                if not isinstance(value, ast.Call):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
                names = [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
                cls = self.class_of_value(module, value) if names else None
                if cls is not None:
                    for name in names:
                        table.setdefault(name, set()).add(cls)
        return table

    def instance_class(self, module: ProjectModule, name: str, at: ast.AST, by_name: bool = True) -> ClassRef | None:
        """The project class of the instance a name holds at ``at`` (``by_name``: else the one class the
        project ever builds into that name, :meth:`by_name`)."""
        assert module.ctx is not None
        annotated = self._annotated_class(module, name, at)
        if annotated is not None:
            return annotated
        value = self.assigned(module, name, at)
        if value is None and module.ctx.enclosing_function(at) is not None:
            value = assigned_value(module.ctx.tree, name, self._assignments)
        if value is not None:
            found = self.class_of_value(module, value)
            if found is not None or not _mentions(value, name):
                return found
            # ``model = model.cuda()``, ``model = DDP(model, ...)``: still the instance built before
            earlier = self._built_before(module, name, at)
            if earlier is not None:
                return earlier
        if not by_name:
            return None
        # ``train(model, ...)`` in each of several scripts: the one class this file builds into the name; else the project's
        # one class of that name, else (copies of a program side by side) the one defined nearest this file
        own = self._constructed_in(module).get(name, set())
        return next(iter(own)) if len(own) == 1 else self.by_name(name) or self._nearest_built(module, name)

    def _nearest_built(self, module: ProjectModule, name: str) -> ClassRef | None:
        """Among the classes the project builds into ``name``, the one defined nearest ``module`` (the longest
        shared dotted prefix), when one is: copies of one program side by side (``alpaca/util/misc.py`` and
        ``gorilla/alpaca/util/misc.py`` each define the ``loss_scaler``'s class) each use their own."""
        classes = self.constructed.get(name, set())
        if len(classes) < 2:
            return None
        best = max(shared_prefix(ref[0], module) for ref in classes)
        nearest = [ref for ref in classes if shared_prefix(ref[0], module) == best]
        return nearest[0] if best > 0 and len(nearest) == 1 else None

    def _built_before(self, module: ProjectModule, name: str, at: ast.AST) -> ClassRef | None:
        """The class built into ``name`` by the latest assignment in its scope, up to ``at``, that does not
        re-wrap the name itself (``model = Net()`` ... ``model = model.train()``)."""
        value = self._origin_value(module, name, at)
        return self.class_of_value(module, value) if value is not None else None

    def _origin_value(self, module: ProjectModule, name: str, at: ast.AST) -> ast.expr | None:
        """The latest value assigned to ``name`` in its scope, up to ``at``, that does not re-wrap the name."""
        assert module.ctx is not None
        scope = module.ctx.enclosing_function(at) or module.ctx.tree
        history = self._history.get(scope)
        if history is None:
            history = self._history[scope] = assignment_history(scope)
        line = getattr(at, "lineno", None)
        for assigned_at, value in reversed(history.get(name, ())):
            if (line is None or assigned_at <= line) and not _mentions(value, name):
                return value
        return None

    def _scope_typing(self, module: ProjectModule, scope: ast.AST) -> tuple[dict[str, list[ast.Assign]], dict[str, list[ast.expr]]]:
        """One walk per scope: name -> its assignments in an ``if``'s branches, and name -> its annotations
        (``x: Cls = ...``, a parameter ``x: Cls``)."""
        found = self._typed.get(scope)
        if found is None:
            assert module.ctx is not None
            branches: dict[str, list[ast.Assign]] = {}
            annotations: dict[str, list[ast.expr]] = {}
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]:
                    if arg.annotation is not None:
                        annotations.setdefault(arg.arg, []).append(arg.annotation)
            for node in scope_walk(scope, SCOPE_NODES):  # its own code, not its nested functions' and classes'
                if isinstance(node, ast.Assign) and isinstance(module.ctx.parents.get(node), ast.If):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            branches.setdefault(target.id, []).append(node)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and scope is not module.ctx.tree:
                    annotations.setdefault(node.target.id, []).append(node.annotation)
            found = self._typed[scope] = (branches, annotations)
        return found

    def _annotated_class(self, module: ProjectModule, name: str, at: ast.AST) -> ClassRef | None:
        """The project class a name is annotated with in the function holding ``at``: ``bpr: utils.BPRLoss =
        loss_class``, or a parameter ``loss: BPRLoss``."""
        assert module.ctx is not None
        function = module.ctx.enclosing_function(at)
        if function is None:
            return None
        for annotation in self._scope_typing(module, function)[1].get(name, ()):
            target = self.table.resolve_dotted(module, annotation)
            if isinstance(target, tuple) and isinstance(target[1], ast.ClassDef):
                return target[0], target[1]
        return None

    def instance_classes(self, module: ProjectModule, name: str, at: ast.AST, by_name: bool = True) -> list[ClassRef]:
        """The project classes the instance a name holds at ``at`` may be: each class the name is
        built from in the branches of an ``if`` (``if args.policy == "TD3": policy = TD3(...)``
        ``elif ...: policy = DDPG(...)``, options the run chooses among; in the module's branches for a name
        a function reads but never assigns), else :meth:`instance_class`, else the classes its value may build
        by name (:meth:`built_classes`: a registry, a module imported by name, a factory's branches), else
        those of a container a loop over ``self.blocks`` binds it to."""
        assert module.ctx is not None
        scope = module.ctx.enclosing_function(at) or module.ctx.tree
        scopes = [scope]
        if scope is not module.ctx.tree and self.assigned(module, name, at) is None:
            scopes.append(module.ctx.tree)  # a global read in a function: ``model`` built by the script's ``if``
        for where in scopes:
            branches: list[ClassRef] = []
            for node in self._scope_typing(module, where)[0].get(name, ()):
                cls = self.class_of_value(module, node.value)
                if cls is not None and cls not in branches:
                    branches.append(cls)
            if len(branches) > 1:
                return branches
        single = self.instance_class(module, name, at, by_name)
        if single is not None:
            return [single]
        value = self.assigned(module, name, at)
        if value is None and scope is not module.ctx.tree:
            value = assigned_value(module.ctx.tree, name, self._assignments)
        if value is not None and _mentions(value, name):  # ``model = model.cuda()``: what was built before
            value = self._origin_value(module, name, at)
        built = self.built_classes(module, value) if value is not None else []
        return built or self._registry_classes(module, self.assigned(module, name, at), at) or self._loop_element_classes(module, name, at)

    def container_classes(self, module: ProjectModule, cls: ast.ClassDef, attr: str) -> list[ClassRef]:
        """The classes of the submodules a container ``self.attr`` of ``cls`` holds (:mod:`.containers`)."""
        key = (cls, attr)
        found = self._elements.get(key)
        if found is None:
            found = []
            for value in element_values(cls, attr):
                built = self.class_of_value(module, value)
                if built is not None and built not in found:
                    found.append(built)
            found = self._elements[key] = found[:_REGISTRY_CLASSES]
        return found

    def _loop_element_classes(self, module: ProjectModule, name: str, at: ast.AST) -> list[ClassRef]:
        """``for blk in self.blocks: x = blk(x)``: the classes of the container's elements."""
        assert module.ctx is not None
        for ancestor in module.ctx.ancestors(at):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return []
            if isinstance(ancestor, (ast.For, ast.AsyncFor)):
                attr = iterated_attribute(ancestor, name)
                owner = owner_class(module.ctx, ancestor) if attr is not None else None
                if attr is not None and owner is not None:
                    return self.container_classes(module, owner, attr)
        return []

    def _registry_classes(self, module: ProjectModule, value: ast.expr | None, at: ast.AST) -> list[ClassRef]:
        """``algorithm = algorithm_class(...)`` where ``algorithm_class = algorithms.get_algorithm_class(name)``
        and that function returns ``globals()[name]``: any class of its file, the one the run's option names."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return []
        chooser = self.assigned(module, value.func.id, at)
        if not isinstance(chooser, ast.Call):
            return []
        target = self.table.resolve_function(module, chooser.func)
        if target is None or not _returns_from_globals(target[1]):
            return []
        owner = target[0]
        return [(owner, cls) for cls in owner.classes.values()][:_REGISTRY_CLASSES]

    def by_name(self, name: str) -> ClassRef | None:
        """The one project class ever constructed into a variable or attribute of this name."""
        classes = self.constructed.get(name, set())
        return next(iter(classes)) if len(classes) == 1 else None

    def self_attribute_class(self, module: ProjectModule, cls: ast.ClassDef, attr: str) -> ClassRef | None:
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
                        return self.class_of_value(module, node.value)
                    if isinstance(node.value, ast.Name):
                        return self.by_name(node.value.id) or self.by_name(attr)
        return None

    def self_attribute_classes(self, module: ProjectModule, cls: ast.ClassDef, attr: str) -> list[ClassRef]:
        """The classes ``self.attr`` may hold: :meth:`self_attribute_class`'s one, else those built into it by
        name (:meth:`built_classes`: ``self.net_g = build_network(opt["network_g"])``, a registry lookup)."""
        held = self.self_attribute_class(module, cls, attr)
        if held is not None:
            return [held]
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(self_attribute(t, attr) for t in node.targets):
                built = self.built_classes(module, node.value)
                if built:
                    return built
        return []

    def callees(self, module: ProjectModule, call: ast.Call) -> list[FunctionRef]:
        """The functions of *other* project files a call runs, and the ``forward`` (``__call__``) of a class of
        this file that it calls through an instance (``self.attn(x)``: the model's submodules are per-step
        code too; the single-file finder does not follow ``forward``)."""
        assert module.ctx is not None
        found: list[FunctionRef] = []
        func = call.func
        target = self.table.resolve_dotted(module, func)
        if isinstance(target, tuple) and isinstance(target[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((target[0], target[1]))
        elif target is None and isinstance(func, ast.Name) and func.id not in module.ctx.functions:
            for cls in self.instance_classes(module, func.id, call):
                found.extend(self.callable_methods(*cls))
            # ``mix = {"feat": lib.feat_mix, "dim": lib.dim_mix}[mode]`` then ``mix(x)``: each function it may pick
            for value in picked_from_dict(self.assigned(module, func.id, call)):
                picked = self.table.resolve_function(module, value)
                if picked is not None:
                    found.append(picked)
        elif target is None and isinstance(func, ast.Attribute):
            found.extend(self._method_callees(module, call, func))
        for arg in call.args:  # a project function handed on to be called (``optimizer.step(closure)``)
            passed = self.table.resolve_function(module, arg) if not _local_name(module, arg, call) else None
            if passed is not None:
                found.append(passed)
        return [(m, f) for m, f in found if (m is not module or f.name in _CALLABLE_METHODS) and m.ctx is not None and not m.is_test]

    def _method_callees(self, module: ProjectModule, call: ast.Call, func: ast.Attribute) -> list[FunctionRef]:
        """``self.matcher(...)``, ``criterion.loss_labels(...)``, ``self.mp_trainer.optimize(...)``."""
        assert module.ctx is not None
        receiver = func.value
        cls = None
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            owner = owner_class(module.ctx, call)
            if owner is not None and module.method(owner, func.attr) is None:
                held = self.self_attribute_classes(module, owner, func.attr) or self.container_classes(module, owner, func.attr)
                inherited = self.table.find_method(module, owner, func.attr) if not held else None
                if inherited is not None and inherited[0] is not module and not is_abstract(inherited[1]):
                    return [inherited]  # ``self.parse_feature(x)``: a method a base class of another file defines
                if inherited is not None and not isinstance(module.ctx.parents.get(call), ast.Expr) and is_abstract(inherited[1]):
                    # ``self.calc_loss(batch)`` in a subclass of the base that leaves it abstract: its subclasses' own
                    return self.overrides.below(owner, func.attr)
                return [m for cls in held for m in self.callable_methods(*cls)]  # ``self.stem(x)``: a Sequential runs each
            if owner is not None and not isinstance(module.ctx.parents.get(call), ast.Expr):
                # ``loss = self.calculate_loss(batch)`` left abstract, or ``loss = self.train_step()`` that subclasses
                # override: each subclass's runs (:mod:`.overrides`); not a hook called for its effect
                # (``self.debug(batch, output)``, often behind a debug option)
                return self.overrides.below(owner, func.attr)
            return []
        if isinstance(receiver, ast.Name):
            classes = self.instance_classes(module, receiver.id, call)
            methods = [m for c in classes if (m := self.table.find_method(*c, func.attr))]
            if methods:
                return methods
            if not classes:  # ``model.loss(out, y)`` on a model whose class is chosen elsewhere (:mod:`.model_methods`)
                methods = self.model_methods.of_model(module, receiver.id, call, func.attr)
                if methods:
                    return methods
        elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
            owner = owner_class(module.ctx, call)
            if owner is not None:
                held = self.self_attribute_classes(module, owner, receiver.attr)
                methods = [m for c in held if (m := self.table.find_method(*c, func.attr))]
                if len(held) > 1 and methods:  # built by a registry lookup or a factory's branches: each that has it
                    return methods
                cls = held[0] if len(held) == 1 else None
        if cls is not None:
            method = self.table.find_method(*cls, func.attr)
            if method is not None:
                return [method]
        return self._distinctive_method(func.attr)

    def callable_methods(self, module: ProjectModule, cls: ast.ClassDef) -> list[FunctionRef]:
        """What calling an instance runs: its ``forward`` (an ``nn.Module``) or ``__call__``, its own or a
        project base class's (``class Generator(BaseNetwork)`` whose ``forward`` the base defines)."""
        for name in _CALLABLE_METHODS:
            method = self.table.find_method(module, cls, name)
            if method is not None:
                return [method]
        return []

    def _distinctive_method(self, name: str) -> list[FunctionRef]:
        """A method whose name only one project class defines, and that no library object is
        likely to share (``update_with_local_losses``; not ``update`` or ``zero_grad``): the
        receiver, whose class could not be followed (``self.sampler = sampler or Uniform(...)``),
        is an instance of that class or a subclass."""
        if self._methods is None:
            table: dict[str, list[FunctionRef]] = {}
            for module in self.table.by_path.values():
                if module.ctx is None or module.is_test:
                    continue
                for cls in module.classes.values():
                    for node in cls.body:
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            table.setdefault(node.name, []).append((module, node))
            self._methods = table
        found = self._methods.get(name, [])
        if len(found) != 1 or not _distinctive(name):
            return []
        return found


# Method names library objects (modules, optimizers, tensors, loggers, samplers) define too.
_COMMON_METHODS = frozenset(
    {"zero_grad", "state_dict", "load_state_dict", "named_parameters", "named_modules", "named_buffers",
     "named_children", "add_module", "register_buffer", "register_forward_hook", "set_epoch", "add_scalar",
     "add_scalars", "add_image", "log_dict", "log_metrics", "get_lr", "get_last_lr", "add_param_group",
     "clip_grad_norm_", "extra_repr", "reset_parameters", "init_weights", "no_sync", "set_description",
     "set_postfix", "to_dict", "from_pretrained", "save_pretrained", "is_available"}
)


_REGISTRY_CLASSES = 128  # classes a by-name lookup may give, at most


def _returns_from_globals(func: FunctionNode) -> bool:
    """The function returns ``globals()[name]`` (a class picked by name from its own file)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Subscript):
            holder = node.value.value
            if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "globals":
                return True
    return False


def _distinctive(name: str) -> bool:
    """A multi-word method name (``update_with_local_losses``), not a dunder or a library API name."""
    core = name.strip("_")
    return core.count("_") >= 2 and not name.startswith("__") and name not in _COMMON_METHODS


def _looked_up_in(value: ast.AST | None) -> ast.expr | None:
    """What a lookup reads from: ``TRAINERS`` for ``TRAINERS[key]`` or ``TRAINERS.get(key)`` (None: no lookup)."""
    if isinstance(value, ast.Subscript):
        return value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get":
        return value.func.value
    return None


def _local_name(module: ProjectModule, arg: ast.AST, at: ast.AST) -> bool:
    """A name that is a parameter of the function holding ``at``: ``self._forward_once(x, profile)`` passes
    the ``profile`` flag, not the module's ``profile`` function it shadows."""
    function = module.ctx.enclosing_function(at) if module.ctx is not None and isinstance(arg, ast.Name) else None
    if function is None:
        return False
    return arg.id in parameter_names(function.args)  # type: ignore[attr-defined]


def owner_class(ctx: ModuleContext, node: ast.AST) -> ast.ClassDef | None:
    """The class whose body (or a method of it) holds ``node``."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, ast.ClassDef):
            return ancestor
    return None


_RUN_OUTPUT_FOLDERS = frozenset({"log", "logs", "runs", "outputs", "checkpoints", "wandb"})


def _in_run_output(path: str) -> bool:
    """A file under a run's output folder (``log/classification/<run>/pointnet2_utils.py``): a copy of the
    code saved with a checkpoint, which no import by name picks."""
    return any(part in _RUN_OUTPUT_FOLDERS for part in path.replace("\\", "/").split("/")[:-1])


def _peeled(value: ast.AST, through_names: bool = False) -> ast.AST:
    """``Net(...)`` for ``Net(...).cuda()`` or ``Net(...).to(device).train()``: calls that return the module itself
    (``through_names``: also ``net`` for ``net.cuda()``)."""
    receivers = (ast.Call, ast.Name) if through_names else (ast.Call,)
    while (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        and value.func.attr in _SELF_RETURNING and isinstance(value.func.value, receivers)
    ):
        value = value.func.value
    return value


def _mentions(value: ast.AST, name: str) -> bool:
    """Whether the plain name ``name`` occurs in ``value``."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))
