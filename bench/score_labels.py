"""Precision and recall per rule on hand-labelled real training code (bench/labels/).

    python bench/score_labels.py NAME=FOLDER [NAME=FOLDER ...] [--map FILE] [--jobs N] [--python PY] [--pythonpath DIR]

Each FOLDER is a checkout of the repository NAME of the labels file at its pinned
commit (e.g. brought with the mirror tool; the code is never committed here).  Runs
``torchtriage check --format json FOLDER`` (the folder analysed as one project) and
compares the findings with the labels (every file in bench/labels/): a finding on a labelled hazard (same file, line
and code) is a true positive, any other finding a false positive; a hazard no finding
hits is a miss.  A finding that spans several lines (TT508's attention, from its first
statement to the final matmul) also hits a hazard of its code labelled on any line it
spans (labellers mark the scores line or the softmax line), one hazard per finding
(``match``); since 2026-11-28 (seventeenth session), figures before that used the first
line only.

A repository's ``scope`` (its labels' list of folders ending in ``/`` and files, ``[""]`` or none for the whole
repository) is what its labeller judged: a finding outside it is *unjudged*, reported apart and counted neither
right nor wrong (``--whole`` counts it wrong, the floor used from the twentieth session until scopes were
recorded).  Files a labeller judged to be inference, export or demo code are inside the scope: findings
there are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
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


Key = tuple[str, int, str]  # (path in the repository, line, code)


def in_scope(path: str, scope: list[str] | None) -> bool:
    """Whether a repository-relative path lies in a labeller's scope (folders end in ``/``; "" is everything)."""
    if not scope:
        return True
    return any(entry == "" or path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in scope)


def findings(folder: Path, python: str, pythonpath: str | None, hazards: set[Key] = frozenset()) -> set[Key]:
    """The findings of ``torchtriage check`` on ``folder`` as label keys (see ``match``)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [python, "-m", "torchtriage", "check", "--format", "json", "--exit-zero", str(folder)],
        capture_output=True, text=True, env=env, cwd=folder.parent, check=False,
    ).stdout
    return match(json.loads(out or "[]"), folder, hazards)


def match(items: list[dict], folder: Path, hazards: set[Key]) -> set[Key]:
    """Each finding (findings JSON) as a key: its first line, or, for a finding spanning several lines
    that hits no hazard there, the nearest hazard of its code labelled on a line it spans that no other
    finding has taken."""
    found: set[Key] = set()
    spanning: list[tuple[str, int, int, str]] = []
    for item in items:
        path = Path(item["path"])
        relative = (path.relative_to(folder.name) if not path.is_absolute() else path.relative_to(folder)).as_posix()
        key = (relative, item["line"], item["code"])
        end = int(item.get("end_line") or item["line"])
        if key not in hazards and end > item["line"]:
            spanning.append((relative, item["line"], end, item["code"]))
        else:
            found.add(key)
    for relative, line, end, code in spanning:
        inside = [h for h in hazards if h[0] == relative and h[2] == code and line < h[1] <= end and h not in found]
        found.add(min(inside, key=lambda h: h[1]) if inside else (relative, line, code))
    for key in sorted(found - hazards):  # one host read, two codes: see SAME_READ
        other = (key[0], key[1], SAME_READ.get(key[2], ""))
        if other in hazards and other not in found:
            found.discard(key)
            found.add(other)
    return found


# TT101 (a value read on the host) and TT102 (a tensor printed, formatted or logged) name the same sync when the
# read sits inside a log or metric call (``writer.add_scalar(tag, loss.item())``); the rounds' labellers filed
# that read under either code (LABELLING.md), so a finding of one meets a label of the other on the same line.
SAME_READ = {"TT101": "TT102", "TT102": "TT101"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="*", help="NAME=FOLDER")
    parser.add_argument("--map", type=Path, help="a file of NAME=FOLDER lines (bench/labelled_repos.py writes one)")
    parser.add_argument("--jobs", type=int, default=1, help="repositories checked at once")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pythonpath", help="PYTHONPATH for the torchtriage under test")
    parser.add_argument("--whole", action="store_true", help="count findings outside a labeller's scope as wrong")
    args = parser.parse_args()
    labels = load_labels()
    specs = list(args.repos) + (args.map.read_text().split() if args.map else [])
    pairs = [spec.partition("=")[::2] for spec in specs]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # each check is a child process
        results = list(pool.map(
            lambda pair: findings(Path(pair[1]).resolve(), args.python, args.pythonpath,
                                  {(p, line, code) for p, line, code in labels[pair[0]]["hazards"]}),
            pairs))
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    rows: dict[str, tuple[int, int, int]] = {}  # repository -> (right, wrong, missed)
    unjudged: Counter[str] = Counter()  # repository -> findings outside its scope
    for (name, _), found in zip(pairs, results):
        hazards = {(p, line, code) for p, line, code in labels[name]["hazards"]}
        scope = None if args.whole else labels[name].get("scope")
        outside = {key for key in found - hazards if not in_scope(key[0], scope)}
        for key in sorted(outside):
            print(f"unjudged {name}: {key[0]}:{key[1]} {key[2]}", file=sys.stderr)
        unjudged[name] = len(outside)
        found = found - outside
        for key in found:
            (tp if key in hazards else fp)[key[2]] += 1
        for key in hazards - found:
            fn[key[2]] += 1
        rows[name] = (len(found & hazards), len(found - hazards), len(hazards - found))
        for key in sorted(found - hazards):
            print(f"FP {name}: {key[0]}:{key[1]} {key[2]}", file=sys.stderr)
        for key in sorted(hazards - found):
            print(f"miss {name}: {key[0]}:{key[1]} {key[2]}", file=sys.stderr)
    print(_table("rule", {code: (tp[code], fp[code], fn[code]) for code in sorted(set(tp) | set(fp) | set(fn))}))
    print()
    print(_table("repository", rows, {name: labels[name].get("domain", "") for name in rows}))
    print()
    domains: dict[str, list[int]] = {}
    for name, (right, wrong, missed) in rows.items():
        sums = domains.setdefault(labels[name].get("domain", "") or "(none)", [0, 0, 0])
        sums[0] += right
        sums[1] += wrong
        sums[2] += missed
    print(_table("domain", {domain: tuple(sums) for domain, sums in sorted(domains.items())}))  # type: ignore[misc]
    print()
    scoped = sum(1 for name in rows if labels[name].get("scope") not in (None, [""]))
    print(f"Findings outside the labellers' scopes (unjudged, not counted): {sum(unjudged.values())} "
          f"in {sum(1 for n in unjudged.values() if n)} of {scoped} repositories with a narrowed scope"
          + (" (--whole: none left out)" if args.whole else ""))


def _table(what: str, rows: dict[str, tuple[int, int, int]], domains: dict[str, str] | None = None) -> str:
    """A Markdown table of (right, wrong, missed) per row, with precision, recall and a total row."""
    extra = " domain |" if domains is not None else ""
    lines = [f"| {what} |{extra} hazards | found right | wrong | missed | precision | recall |",
             "|---|" + ("---|" if domains is not None else "") + "---:|---:|---:|---:|---:|---:|"]
    for key, (right, wrong, missed) in rows.items():
        cell = f" {domains[key]} |" if domains is not None else ""
        lines.append(f"| {key} |{cell} {right + missed} | {right} | {wrong} | {missed} | {_ratio(right, right + wrong)} | "
                     f"{_ratio(right, right + missed)} |")
    right, wrong, missed = (sum(r[i] for r in rows.values()) for i in range(3))
    blank = " |" if domains is not None else ""
    lines.append(f"| **all** |{blank} {right + missed} | {right} | {wrong} | {missed} | {_ratio(right, right + wrong)} | "
                 f"{_ratio(right, right + missed)} |")
    return "\n".join(lines)


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "–"


if __name__ == "__main__":
    main()
