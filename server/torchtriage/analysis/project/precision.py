"""Files whose precision another project file chooses.

A training loop in a library file (``utils/train_utils.py``'s ``train(model, loader, ...)``) runs the
model its caller built, in the precision the caller chose: FSDP's ``MixedPrecision``, ``model.half()``,
an autocast or ``--amp`` flag set up in ``T5_training.py``.  TT504 reads only its own file, so it asks
here whether a file that imports it chooses a precision.  A flag the importer only defines
(``parser.add_argument("--use_amp")``) and never reads chooses nothing for the files it imports: the
experiment that reads it chooses, and one that never does runs in fp32.
"""

from __future__ import annotations

import ast
import re

from ..context import ModuleContext
from .modules import ModuleTable, ProjectModule


# ``torch.set_default_tensor_type(torch.cuda.HalfTensor)`` / ``torch.set_default_dtype(torch.bfloat16)``: every model
# built while it holds is in half precision, whichever file builds it
_HALF_DEFAULT = re.compile(r"set_default_tensor_type\(\s*torch\.(cuda\.)?(Half|BFloat16)Tensor|"
                           r"set_default_dtype\(\s*torch\.(float16|half|bfloat16)\b")


def precision_choosers(table: ModuleTable) -> dict[ProjectModule, str]:
    """Per file that chooses no precision itself: the label of a (non-test) project file importing it that does,
    or that imports a file which makes half precision the default dtype (a model builder: the model the
    importer builds with it, and hands to the other file's loop, is in half precision)."""
    from ..rules.tt504_no_autocast import chooses_precision

    chooses = {m: chooses_precision(m.ctx.source) for m in table.by_path.values() if m.ctx is not None}
    half_default = {m for m in chooses if m.ctx is not None and _HALF_DEFAULT.search(m.ctx.source)}
    found: dict[ProjectModule, str] = {}
    for importer, chose in chooses.items():
        if chose and importer.ctx is not None and "add_argument" in importer.ctx.source:
            chose = chooses_precision(_without_flag_definitions(importer.ctx))  # ``--use_amp`` defined, never read here
        if not chose and half_default:
            chose = any(other in half_default for other in table.imported(importer))
        if not chose or importer.is_test:
            continue
        for other in _imported_through(table, importer):
            if other is not importer and other.ctx is not None and not chooses.get(other, True) and other not in found:
                found[other] = importer.label
    return found


def _without_flag_definitions(ctx: ModuleContext) -> str:
    """The file's text with its command-line flag definitions (``parser.add_argument("--use_amp", ...)``) blanked:
    a flag only defined chooses nothing; the files that read it choose (``if args.use_amp: autocast``)."""
    lines = ctx.source.splitlines()
    for call in ctx.nodes_of(ast.Call):
        func = getattr(call, "func", None)
        if isinstance(func, ast.Attribute) and func.attr == "add_argument":
            for line in range(call.lineno - 1, (call.end_lineno or call.lineno)):  # type: ignore[attr-defined]
                lines[line] = ""
    return "\n".join(lines)


def _imported_through(table: ModuleTable, importer: ProjectModule) -> list[ProjectModule]:
    """The project files a file imports, and those defining the names it imports through a package's re-exports
    (``from utils import train`` where ``utils/__init__.py`` does ``from .train_utils import train``)."""
    found = dict.fromkeys(table.imported(importer))
    for local, (_, attr) in importer.imports.items():
        symbol = table.symbol(importer, local) if attr is not None else None
        if isinstance(symbol, tuple):
            found[symbol[0]] = None
    return list(found)
