"""Export every labelled repository (bench/labels/) at the commit its labels name, for bench/score_labels.py.

    python bench/labelled_repos.py --dest /tmp/lab      # -> /tmp/lab/<name>/..., /tmp/lab/map.txt
    python bench/score_labels.py --map /tmp/lab/map.txt --jobs 2

Reads the bare git mirrors that the project's ``fetch`` tool leaves under ``/work/.mirror/<owner>+<name>/repo``
(or ``repo/.git``) and copies out only the ``.py`` files, whole repositories (findings in files a labeller
did not read count as wrong).  Repositories whose mirror is missing are listed: fetch them, then run again.
Nothing from these repositories is kept in this one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from corpus import MIRRORS  # bench/corpus.py (the script's folder is on sys.path)
from score_labels import load_labels


def git_dir(github: str) -> Path | None:
    """The mirror of ``owner/name``, bare or with a work tree's ``.git``."""
    base = MIRRORS / github.replace("/", "+", 1) / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").exists():
            return candidate
    return None


def export(repository: Path, commit: str, dest: Path) -> int:
    """Copy the ``.py`` blobs of ``commit`` into ``dest`` (made afresh); returns how many."""
    listing = subprocess.run(["git", f"--git-dir={repository}", "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout
    blobs = []
    for entry in filter(None, listing.split(b"\0")):
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000" and path.endswith(b".py"):
            blobs.append((path.decode("utf-8", "surrogateescape"), sha))
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    reader = subprocess.Popen(["git", f"--git-dir={repository}", "cat-file", "--batch"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert reader.stdin is not None and reader.stdout is not None
    written = 0
    for path, sha in blobs:
        reader.stdin.write(sha + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)  # the newline after each object
        target = (dest / path).resolve()
        if dest.resolve() not in target.parents:
            continue  # a path that would leave the folder
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    reader.stdin.close()
    reader.wait()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=Path("/tmp/lab"))
    parser.add_argument("names", nargs="*", help="only these labelled repositories")
    args = parser.parse_args(argv)
    lines, missing = [], []
    for name, entry in sorted(load_labels().items()):
        if args.names and name not in args.names:
            continue
        repository = git_dir(entry["github"])
        if repository is None:
            missing.append(f"github:{entry['github']}")
            continue
        files = export(repository, entry.get("commit") or "HEAD", args.dest / name)
        lines.append(f"{name}={args.dest / name}")
        print(f"{name:40} {files:6} files")
    (args.dest / "map.txt").write_text("\n".join(lines) + "\n")
    if missing:
        print(f"{len(missing)} mirrors missing (fetch them, then run again): {' '.join(missing)}", file=sys.stderr)
    print(f"{len(lines)} repositories in {args.dest / 'map.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
