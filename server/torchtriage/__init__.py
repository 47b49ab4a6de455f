"""torchtriage: why is my PyTorch training slow? Static hot-loop hazards and runtime profiles."""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]
    """``%load_ext torchtriage``: the ``%%torchtriage`` and ``%torchtriage_check`` magics."""
    # IPython looks the hook up on the top-level package; the host is imported only here, by name, so the
    # modules that import `torchtriage` (for __version__) do not depend on the Jupyter host.
    import importlib

    importlib.import_module("torchtriage.jupyter.magic").load_ipython_extension(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension is inside the package (``jupyter labextension develop``)."""
    return [{"src": "jupyter/labextension", "dest": "torchtriage-jupyterlab"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The Jupyter server extension (``jupyter server extension enable torchtriage``)."""
    return [{"module": "torchtriage.jupyter"}]
