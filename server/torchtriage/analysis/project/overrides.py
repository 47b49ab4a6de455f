"""What ``self.method(...)`` runs when subclasses define ``method`` themselves.

A trainer base class writes the loop once and calls ``self.calculate_loss(batch)`` and
``self.train_step()`` in it; the base declares them abstract (``@abstractmethod``, a body of
``pass``, ``...`` or ``raise NotImplementedError``) or gives a default, and each subclass,
often in a file of its own, overrides them.  Every step then runs the subclass's method:
each project subclass's override is a callee of the call.
"""

from __future__ import annotations

import ast

from ..syntax import bound_name
from .class_tree import ClassTree
from .modules import FunctionNode, ProjectModule

FunctionRef = tuple[ProjectModule, FunctionNode]

MAX_OVERRIDES = 32  # subclasses' overrides of one method, at most (a guard)


class Overrides:
    """Project subclasses of a class, and their overrides of a method."""

    def __init__(self, tree: ClassTree) -> None:
        self.tree = tree

    def below(self, cls: ast.ClassDef, name: str) -> list[FunctionRef]:
        """The concrete overrides of ``name`` in the project subclasses of ``cls`` (transitively); empty
        when there are more than :data:`MAX_OVERRIDES`."""
        found: list[FunctionRef] = []
        seen: set[ast.ClassDef] = {cls}
        frontier = [cls]
        while frontier and len(found) <= MAX_OVERRIDES:
            following: list[ast.ClassDef] = []
            for parent in frontier:
                for owner, child in self.tree.children(parent):
                    if child in seen:
                        continue
                    seen.add(child)
                    override = owner.method(child, name)
                    if override is not None and not is_abstract(override):
                        found.append((owner, override))
                    following.append(child)
            frontier = following
        return found if len(found) <= MAX_OVERRIDES else []


def is_abstract(method: FunctionNode) -> bool:
    """Declared for subclasses to implement: ``@abstractmethod``, or a body of only a docstring and
    ``pass`` / ``...`` / ``raise NotImplementedError``."""
    if any(bound_name(decorator) == "abstractmethod" for decorator in method.decorator_list):
        return True
    body = [s for s in method.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                                           and statement.value.value is Ellipsis):
        return True
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False
