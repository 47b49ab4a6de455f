"""Assemble the static-benchmark corpus (bench/corpus/, gitignored) from mirrored repos.

The corpus is every ``.py`` file of pytorch/examples, timm
(huggingface/pytorch-image-models) and nanoGPT, read straight out of the bare
git mirrors that the project's ``fetch`` tool leaves under ``/work/.mirror``
(``git ls-tree`` + ``git cat-file``, so missing large blobs elsewhere in a
repo do not matter).  Extra repos (minGPT, Lightning examples) can be added
with ``--extra`` for accuracy runs; the benchmark figures use the default set.

    python bench/corpus.py            # -> bench/corpus/<owner+name>/...
    python bench/corpus.py --list     # what is there, files and lines
    python bench/corpus.py --projects --dest /tmp/projects   # the labelled repos of
        # bench/labels/issue12_real_code.json, for bench/score_labels.py

``mirror_file("owner+name:path")`` reads one file at a mirror's HEAD (the LSP bench's
``--file huggingface+pytorch-image-models:train.py``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

MIRRORS = Path("/work/.mirror")
DEFAULT_REPOS = ("pytorch+examples", "huggingface+pytorch-image-models", "karpathy+nanoGPT")
EXTRA_REPOS = ("karpathy+minGPT", "Lightning-AI+pytorch-lightning:examples")
# Untuned repositories labelled for issue 12 (bench/ACCURACY.md, "Projects"); the labels name
# the commit each was read at: check that the mirror's HEAD matches before scoring.
LABELLED_REPOS = ("facebookresearch+detr", "facebookresearch+mae", "facebookresearch+dino", "facebookresearch+deit")
CORPUS = Path(__file__).resolve().parent / "corpus"


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True
    ).stdout


def python_files(git_dir: Path, under: str = "") -> list[str]:
    """Paths of the ``.py`` files at HEAD, optionally below one folder."""
    args = ["ls-tree", "-r", "--name-only", "HEAD"] + ([under] if under else [])
    names = _git(git_dir, *args).decode("utf-8", "replace").splitlines()
    return [name for name in names if name.endswith(".py")]


def export_repo(spec: str, dest_root: Path) -> tuple[int, int]:
    """Copy one repo's ``.py`` files into ``dest_root/<repo>``; returns (files, lines)."""
    name, _, under = spec.partition(":")
    git_dir = MIRRORS / name / "repo"
    if not git_dir.is_dir():
        raise FileNotFoundError(f"{git_dir} missing: fetch github:{name.replace('+', '/')} first")
    dest = dest_root / name
    files = lines = 0
    for path in python_files(git_dir, under):
        try:
            data = _git(git_dir, "show", f"HEAD:{path}")
        except subprocess.CalledProcessError:
            continue  # blob absent from the snapshot
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files += 1
        lines += data.count(b"\n")
    return files, lines


def build(repos: tuple[str, ...] = DEFAULT_REPOS, dest_root: Path = CORPUS) -> dict[str, tuple[int, int]]:
    """Recreate the corpus folder from scratch."""
    if dest_root.exists():
        shutil.rmtree(dest_root)
    dest_root.mkdir(parents=True)
    return {spec: export_repo(spec, dest_root) for spec in repos}


def mirror_file(spec: str) -> bytes:
    """``owner+name:path`` at the mirror's HEAD."""
    name, _, path = spec.partition(":")
    return _git(MIRRORS / name / "repo", "show", f"HEAD:{path}")


def corpus_files(root: Path = CORPUS) -> list[Path]:
    return sorted(root.rglob("*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra", action="store_true", help="also minGPT and the Lightning examples")
    parser.add_argument("--dest", type=Path, default=CORPUS)
    parser.add_argument("--list", action="store_true", help="only describe the existing corpus")
    parser.add_argument("--projects", action="store_true", help="the labelled repositories (detr, mae, dino, deit) instead")
    args = parser.parse_args(argv)
    if not args.list:
        repos = LABELLED_REPOS if args.projects else DEFAULT_REPOS + (EXTRA_REPOS if args.extra else ())
        for spec, (files, lines) in build(repos, args.dest).items():
            print(f"{spec:45} {files:5} files {lines:8} lines")
    files = corpus_files(args.dest)
    total = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"{'total':45} {len(files):5} files {total:8} lines in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
