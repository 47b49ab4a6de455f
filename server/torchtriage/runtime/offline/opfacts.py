"""The few facts a trace's operator arguments give the pattern rules, as one short string per operator.

With ``record_shapes=True`` torch writes each ``cpu_op``'s "Input type" (the
C++ scalar type of each tensor input: ``float``, ``c10::Half``,
``c10::BFloat16``; ``""`` for a ``None``) and "Input Dims" (its sizes).  The
reader (``events``) keeps, in the record's last field, only what
``patterns`` needs, for only the operators it looks at; every other
operator gets ``""``, so a trace's records grow by nothing but these strings
(interned: one object per distinct value):

===========================  ==================================================
matmuls and convolutions     ``dtype|AxB,CxD``: the dtype and the sizes of the
(``SHAPE_OPS``)              two operands that define the math (the agent's
                             ``ShapeStat`` form)
``aten::conv1d/2d/3d``       ``bias`` or ``nobias`` (the third input is a tensor)
``aten::copy_``              ``same`` or ``cast``: the destination's dtype is
                             the source's
``aten::to`` and the fills   the first input's sizes (``64x128``), to tell that
(``fill_``, ``zero_``,       a tensor filled on the CPU is the one copied
``normal_``, ``uniform_``)
===========================  ==================================================

Without ``record_shapes`` there are no such arguments and every operator gets
``""``: the rules then work from names alone.  No torch needed.
"""

from __future__ import annotations

from typing import Any

from ..agent.shapes import SHAPE_OPS

DTYPES = {"float": "float32", "c10::Half": "float16", "c10::BFloat16": "bfloat16", "double": "float64"}
CONVS = ("aten::conv1d", "aten::conv2d", "aten::conv3d")
INIT_OPS = ("aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_")  # what fills a new tensor in place
SIZED = INIT_OPS + ("aten::to",)


def dtype_name(value: Any) -> str:
    """``float32`` for the trace's ``float``; other names as written ("" when not a string)."""
    return DTYPES.get(value, value) if isinstance(value, str) else ""


def sizes(value: Any) -> str:
    """``64x128`` for ``[64, 128]`` ("" for anything else; ``[]``, a 0-dim tensor, is "")."""
    if not isinstance(value, list):
        return ""
    try:
        return "x".join(str(int(x)) for x in value)
    except (TypeError, ValueError):
        return ""


def op_facts(name: str, types: Any, dims: Any) -> str:
    """The facts string of one operator event, from its "Input type" and "Input Dims" arguments
    ("" when the rules need nothing of it or the trace has no shapes)."""
    if name in SHAPE_OPS:
        if not isinstance(types, list) or not isinstance(dims, list):
            return ""
        a, b = SHAPE_OPS[name]
        if max(a, b) >= min(len(types), len(dims)):
            return ""
        return f"{dtype_name(types[a])}|{sizes(dims[a])},{sizes(dims[b])}"
    if name in CONVS:
        if not isinstance(types, list) or len(types) < 2:
            return ""
        return "bias" if len(types) > 2 and types[2] else "nobias"
    if name == "aten::copy_":
        if not isinstance(types, list) or len(types) < 2 or not types[0]:
            return ""
        return "same" if types[0] == types[1] else "cast"
    if name in SIZED:
        return sizes(dims[0]) if isinstance(dims, list) and dims else ""
    return ""


def shape_of(facts: str) -> tuple[str, str]:
    """(dtype, dims) of a matmul's or convolution's facts string; ("", "") when it has none."""
    dtype, _, dims = facts.partition("|")
    return dtype, dims if dims != "," else ""
