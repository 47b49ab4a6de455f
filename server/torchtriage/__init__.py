"""torchtriage: why is my PyTorch training slow? Static hot-loop hazards and runtime profiles."""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]
    """``%load_ext torchtriage``: the ``%%torchtriage`` and ``%torchtriage_check`` magics."""
    from .jupyter import load_ipython_extension as load

    load(ipython)
