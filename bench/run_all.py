"""Run every benchmark script in bench/ (``*_bench.py``), one after another, and summarise.

Each script runs in its own interpreter with the arguments given after ``--``
(passed to every script), so one failing benchmark does not stop the others.

    python bench/run_all.py                 # all *_bench.py
    python bench/run_all.py -k static       # only names containing "static"
    python bench/run_all.py -- --repeats 1  # forwarded to each script
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def bench_scripts(folder: Path = HERE, keyword: str = "") -> list[Path]:
    return [p for p in sorted(folder.glob("*_bench.py")) if keyword in p.stem]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    forwarded: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, forwarded = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--keyword", default="", help="only scripts whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    args = parser.parse_args(argv)
    scripts = bench_scripts(keyword=args.keyword)
    if args.list or not scripts:
        print("\n".join(p.name for p in scripts) or "no *_bench.py scripts found")
        return 0 if scripts or args.list else 1
    outcomes: list[tuple[str, int, float]] = []
    for script in scripts:
        print(f"=== {script.name} ===", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *forwarded], cwd=HERE.parent).returncode
        outcomes.append((script.name, code, time.perf_counter() - start))
    print("\n=== summary ===")
    for name, code, seconds in outcomes:
        print(f"{'ok  ' if code == 0 else 'FAIL'} {name:30} {seconds:7.1f} s" + (f"  (exit {code})" if code else ""))
    return 0 if all(code == 0 for _, code, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
