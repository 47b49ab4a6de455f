"""Precision and recall per rule on hand-labelled real training code (bench/labels/).

    python bench/score_labels.py NAME=FOLDER [NAME=FOLDER ...] [--python PY] [--pythonpath DIR]

Each FOLDER is a checkout of the repository NAME of the labels file at its pinned
commit (e.g. brought with the mirror tool; the code is never committed here).  Runs
``torchtriage check --format json FOLDER`` (the folder analysed as one project) and
compares the findings with the labels (every file in bench/labels/): a finding on a labelled hazard (same file, line
and code) is a true positive, any other finding a false positive; a hazard no finding
hits is a miss.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

LABELS = Path(__file__).parent / "labels"  # every *.json there: {"repos": {NAME: {"hazards": ...}}}


def load_labels(folder: Path = LABELS) -> dict[str, dict]:
    """Repository name -> its labels, from every labels file (names are unique across files)."""
    repos: dict[str, dict] = {}
    for file in sorted(folder.glob("*.json")):
        for name, entry in json.loads(file.read_text())["repos"].items():
            if name in repos:
                raise SystemExit(f"{name} is labelled twice ({file.name})")
            repos[name] = entry
    return repos


def findings(folder: Path, python: str, pythonpath: str | None) -> set[tuple[str, int, str]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [python, "-m", "torchtriage", "check", "--format", "json", "--exit-zero", str(folder)],
        capture_output=True, text=True, env=env, cwd=folder.parent, check=False,
    ).stdout
    found = set()
    for item in json.loads(out or "[]"):
        path = Path(item["path"])
        relative = path.relative_to(folder.name) if not path.is_absolute() else path.relative_to(folder)
        found.add((relative.as_posix(), item["line"], item["code"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", help="NAME=FOLDER")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pythonpath", help="PYTHONPATH for the torchtriage under test")
    args = parser.parse_args()
    labels = load_labels()
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for spec in args.repos:
        name, _, folder = spec.partition("=")
        hazards = {(p, line, code) for p, line, code in labels[name]["hazards"]}
        found = findings(Path(folder).resolve(), args.python, args.pythonpath)
        for key in found:
            (tp if key in hazards else fp)[key[2]] += 1
        for key in hazards - found:
            fn[key[2]] += 1
        for key in sorted(found - hazards):
            print(f"FP {name}: {key[0]}:{key[1]} {key[2]}", file=sys.stderr)
        for key in sorted(hazards - found):
            print(f"miss {name}: {key[0]}:{key[1]} {key[2]}", file=sys.stderr)
    print("| rule | hazards | found right | wrong | missed | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for code in sorted(set(tp) | set(fp) | set(fn)):
        hazards_n = tp[code] + fn[code]
        precision = tp[code] / (tp[code] + fp[code]) if tp[code] + fp[code] else float("nan")
        recall = tp[code] / hazards_n if hazards_n else float("nan")
        print(f"| {code} | {hazards_n} | {tp[code]} | {fp[code]} | {fn[code]} | {precision:.2f} | {recall:.2f} |")
    T, F, N = sum(tp.values()), sum(fp.values()), sum(fn.values())
    print(f"| **all** | {T + N} | {T} | {F} | {N} | {T / (T + F):.2f} | {T / (T + N):.2f} |")


if __name__ == "__main__":
    main()
