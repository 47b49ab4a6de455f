"""Issue 25: a repository that holds several copies of one project (time-series repositories keep a
``data_provider/`` package at the top and again inside each bundled baseline, ``FEDformer/data_provider/``):
an import resolves the way the script run from that copy's folder would, to the copy whose folder holds the
importing file; never to the importing file itself or to a module beside it.  Invented layouts, no code of any
labelled repository."""

from __future__ import annotations

from torchtriage.analysis.project.program import Project

FACTORY = "from torch.utils.data import DataLoader\n\ndef data_provider(args):\n    return DataLoader(args.data)\n"
EXP = "from data_provider.data_factory import data_provider\n\nloader = data_provider(args)\n"
FILES = {
    "data_provider/__init__.py": "",
    "data_provider/data_factory.py": FACTORY,
    "exp/exp_main.py": EXP,
    "FEDformer/data_provider/__init__.py": "",
    "FEDformer/data_provider/data_factory.py": FACTORY,
    "FEDformer/exp/exp_main.py": EXP,
    "Other/sub/data_provider/data_factory.py": FACTORY,
    "Other/exp/exp_main.py": EXP,
    "model/__init__.py": "class Net:\n    pass\n",
    "utils/model.py": "from model import Net\n",
    "utils/helpers.py": "from model import Net\n",
}


def resolved(project: Project, importer: str, name: str) -> str | None:
    module = project.table.by_path[importer]
    found = project.table.find_module(name, module)
    return found.path if found is not None else None


def test_an_import_resolves_to_the_copy_whose_folder_holds_the_importer() -> None:
    project = Project((path, path, text) for path, text in FILES.items())
    assert resolved(project, "exp/exp_main.py", "data_provider.data_factory") == "data_provider/data_factory.py"
    assert resolved(project, "FEDformer/exp/exp_main.py", "data_provider.data_factory") == "FEDformer/data_provider/data_factory.py"
    # a copy in a folder that does not hold the importer is not the import's: the top-level package is
    assert resolved(project, "Other/exp/exp_main.py", "data_provider.data_factory") == "data_provider/data_factory.py"


def test_an_import_never_resolves_to_the_importer_or_its_own_folder() -> None:
    project = Project((path, path, text) for path, text in FILES.items())
    assert resolved(project, "utils/model.py", "model") == "model/__init__.py"
    assert resolved(project, "utils/helpers.py", "model") == "model/__init__.py"


# A script run with a folder on sys.path (``PYTHONPATH=src/data:src/utils``): ``from data import AudioLoader`` names
# ``src/data/data.py``, though a package ``src/data/`` of that name exists too.
PATH_FILES = {
    "src/data/__init__.py": "",
    "src/data/data.py": "import torch.utils.data as tud\n\nclass AudioLoader(tud.DataLoader):\n    pass\n",
    "src/utils/__init__.py": "",
    "src/utils/data.py": "def pad(x):\n    return x\n",
    "src/bin/train.py": "from data import AudioLoader\n\nloader = AudioLoader(dataset, num_workers=4)\n",
}


def test_a_name_imported_from_a_module_on_the_path_resolves_to_the_one_file_that_defines_it() -> None:
    project = Project((path, path, text) for path, text in PATH_FILES.items())
    train = project.table.by_path["src/bin/train.py"]
    found = project.table.symbol(train, "AudioLoader")
    assert isinstance(found, tuple) and found[0].path == "src/data/data.py" and getattr(found[1], "name", "") == "AudioLoader"
    assert project.context("src/bin/train.py").loader_classes == frozenset({"AudioLoader"})  # type: ignore[union-attr]
    assert project.table.symbol(train, "pad") is None  # not imported by this file
