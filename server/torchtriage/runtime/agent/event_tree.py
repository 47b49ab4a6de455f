"""The profiler's event tree as the agent's walk reads it: shared by every layer of ``Collector``.

Event kinds are compared as ints (``tag.value``, read once per node) rather than
as pybind enums, each node is read into an ``Item`` tuple so that its fields
cross into C++ only once, a ``Frame`` says which Python frame encloses a node,
and ``NodeState`` is what a node passes to its children during the walk
(``collect.py``).  Standard library and torch only.
"""

from __future__ import annotations

from typing import Any, FrozenSet, List, Optional, Tuple, Union

import torch

EventType = torch._C._profiler._EventType
# Event kinds as ints: comparing the pybind enums costs ~0.5 us each, ``tag.value`` once is cheap
TORCH_OP, PY_CALL, PY_C_CALL = EventType.TorchOp.value, EventType.PyCall.value, EventType.PyCCall.value
ALLOCATION, KINETO = EventType.Allocation.value, EventType.Kineto.value
USER_SCOPE = torch._C._profiler.RecordScope.USER_SCOPE

# The innermost Python frame enclosing a node: None not known, False library code,
# else (file_name, function_name) of a user frame.
Frame = Union[None, bool, Tuple[str, str]]
Item = Tuple[Any, int, int, int, Optional[List[Any]]]  # node, tag (its ``value``), start_ns, end_ns, children if read: each read once


class NodeState:
    """What a node passes to its children."""

    __slots__ = ("chain", "scope", "root", "ctx", "backward", "in_op", "open_ops", "main", "frame", "shape")

    def __init__(self, chain: Tuple[int, ...], scope: int, root: int, ctx: str, backward: bool, in_op: bool,
                 open_ops: FrozenSet[str] = frozenset(), main: bool = True, frame: Frame = None, shape: int = -1) -> None:
        self.chain, self.scope, self.root, self.ctx, self.backward, self.in_op = chain, scope, root, ctx, backward, in_op
        self.open_ops = open_ops  # names of the ops enclosing this node (nested same-name ops count once in total time)
        self.main = main  # on the stepping thread (a node's children are on its thread)
        self.frame = frame  # the Python frame calling any Python event below (see ``Frame``)
        self.shape = shape  # the enclosing matmul / convolution in ``Collector.shapes`` (-1: none)


def with_misplaced(nodes: List[Any]) -> Tuple[List[Any], bool]:
    """NODES and, after them, the descendants torch's tree put under a GPU event among them, with whether any was.

    The tree nests events by time, and a GPU kernel's span (device time, later than its launch) can enclose
    CPU events that ran meanwhile: on an H200, ``ProfilerStep#5`` and the optimizer hook that began it sat
    under a GEMM kernel of the step before (and the walk lost them).  A GPU event's children are no part
    of it: they belong to its parent.  (A runtime call's children are the kernels it launched: they stay.)"""
    found = False
    out = nodes
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        if node.tag.value == KINETO and not is_runtime(node.name):  # a runtime call's children are its kernels
            nested = node.children
            if nested:
                if not found:
                    out, found = list(out), True
                out.extend(nested)
    return out, found


def is_runtime(name: str) -> bool:
    """Whether a Kineto event is a CUDA / HIP runtime call made on the CPU (not GPU activity)."""
    return name.startswith(("cuda", "cu", "hip")) or name == "cuda_sync"
