"""Static-analysis speed: torchtriage vs TorchFix 0.7.0 and bare parsers, on one corpus.

Measures, as medians over repeats:

* files/s of the whole ``torchtriage check`` CLI over the corpus (all cores it uses);
* latency of one check of a ~1,000-line training file: in-process
  ``analyze_source`` (and the hot-loop pass alone), and through the CLI;
* TorchFix 0.7.0's CLI (``torchfix -j <cores>``) over the same files;
* ``ast.parse`` and ``libcst.parse_module`` files/s on one core, as anchors;

then prints ratios.  Files/s always divides by the number of ``.py`` files in
the corpus (the CLI skips the ones that never mention torch; that is part of
its speed).  Wall-clock figures depend on the machine and its load: the
one-minute load average is printed with them.

    python bench/corpus.py && python bench/static_bench.py [--repeats 3] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from corpus import CORPUS, build, corpus_files  # noqa: E402


def median_seconds(run: Callable[[], object], repeats: int, warmup: int = 0) -> float:
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_quiet(argv: list[str]) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def training_file(min_lines: int = 1000) -> str:
    """A realistic training module of at least ``min_lines`` lines: the example scripts, concatenated."""
    scripts = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples" / "tuned").glob("*.py"))
    parts: list[str] = ["from __future__ import annotations\n"]
    lines = 1
    while lines < min_lines:
        for script in scripts:
            text = "".join(
                line for line in script.read_text(encoding="utf-8").splitlines(keepends=True)
                if not line.startswith("from __future__")
            )
            parts.append(text)
            lines += text.count("\n")
            if lines >= min_lines:
                break
    source = "".join(parts)
    ast.parse(source)
    return source


def parse_rate(files: list[Path], parse: Callable[[str], object], repeats: int) -> float:
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]

    def run() -> None:
        for text in texts:
            try:
                parse(text)
            except Exception:  # a file the parser rejects still costs its time
                pass

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return len(texts) / median_seconds(run, repeats)


def measure(args: argparse.Namespace) -> dict[str, float | int | str]:
    from torchtriage.analysis import analyze_source
    from torchtriage.analysis.context import ModuleContext
    from torchtriage.analysis.hotloops.finder import find_hot_loops
    from torchtriage.analysis.rules import all_rules

    if not args.corpus.is_dir() or not corpus_files(args.corpus):
        build(dest_root=args.corpus)
    files = corpus_files(args.corpus)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    cores = os.cpu_count() or 1
    found = shutil.which("torchtriage")  # else this interpreter's module: the bench runs outside the venv's PATH too
    tt = [found] if found else [sys.executable, "-m", "torchtriage"]
    results: dict[str, float | int | str] = {
        "files": len(files), "lines": lines, "cores": cores, "rules": len(all_rules()),
        "load_1min": round(os.getloadavg()[0], 2),
    }

    check = [*tt, "check", "--exit-zero", "--no-config", "--format", "json", str(args.corpus)]
    results["torchtriage_cli_s"] = median_seconds(lambda: run_quiet(check), args.repeats, warmup=1)
    results["torchtriage_files_per_s"] = len(files) / results["torchtriage_cli_s"]

    source = training_file()
    results["train_file_lines"] = source.count("\n")
    analyze_source(source, "train_1000.py")  # imports every rule once
    results["analyze_1000_ms"] = 1000 * median_seconds(lambda: analyze_source(source, "train_1000.py"), args.latency_repeats)
    tree = ast.parse(source)
    results["hotloops_1000_ms"] = 1000 * median_seconds(
        lambda: find_hot_loops(ModuleContext(source, tree)), args.latency_repeats
    )
    results["ast_parse_1000_ms"] = 1000 * median_seconds(lambda: ast.parse(source), args.latency_repeats)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train_1000.py"
        path.write_text(source, encoding="utf-8")
        one = [*tt, "check", "--exit-zero", "--no-config", str(path)]
        results["cli_1000_ms"] = 1000 * median_seconds(lambda: run_quiet(one), args.repeats, warmup=1)

    results["ast_files_per_s"] = parse_rate(files, ast.parse, args.repeats)
    if not args.skip_libcst:
        import libcst

        results["libcst_files_per_s"] = parse_rate(files, libcst.parse_module, args.libcst_repeats)
    if not args.skip_torchfix and shutil.which("torchfix"):
        fix = ["torchfix", "-j", str(cores), str(args.corpus)]
        results["torchfix_cli_s"] = median_seconds(lambda: run_quiet(fix), args.torchfix_repeats)
        results["torchfix_files_per_s"] = len(files) / results["torchfix_cli_s"]
    return results


def report(r: dict) -> str:
    rows = [
        ("corpus", f"{r['files']} files, {r['lines']:,} lines; {r['cores']} cores, load {r['load_1min']}"),
        ("torchtriage check (CLI, whole corpus)", f"{r['torchtriage_files_per_s']:.1f} files/s ({r['torchtriage_cli_s']:.2f} s, {r['rules']} rules)"),
        (f"analyze_source, {r['train_file_lines']}-line file", f"{r['analyze_1000_ms']:.1f} ms"),
        ("  of which hot-loop pass", f"{r['hotloops_1000_ms']:.1f} ms"),
        ("  of which ast.parse", f"{r['ast_parse_1000_ms']:.1f} ms"),
        ("torchtriage check (CLI, that one file)", f"{r['cli_1000_ms']:.0f} ms incl. interpreter start"),
        ("ast.parse (1 core)", f"{r['ast_files_per_s']:.1f} files/s"),
    ]
    if "libcst_files_per_s" in r:
        rows.append(("libcst.parse_module (1 core)", f"{r['libcst_files_per_s']:.1f} files/s"))
    if "torchfix_files_per_s" in r:
        rows.append((f"TorchFix 0.7.0 CLI (-j {r['cores']})", f"{r['torchfix_files_per_s']:.2f} files/s ({r['torchfix_cli_s']:.1f} s)"))
    ratios = [("torchtriage / ast.parse", r["torchtriage_files_per_s"] / r["ast_files_per_s"])]
    if "libcst_files_per_s" in r:
        ratios.append(("torchtriage / libcst.parse_module", r["torchtriage_files_per_s"] / r["libcst_files_per_s"]))
    if "torchfix_files_per_s" in r:
        ratios.append(("torchtriage / TorchFix", r["torchtriage_files_per_s"] / r["torchfix_files_per_s"]))
    lines = ["| measure | median |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)]
    lines += ["", "| ratio | x |", "|---|---|", *(f"| {a} | {b:.1f}x |" for a, b in ratios)]
    targets = [
        f"target >= 50 files/s: {'met' if r['torchtriage_files_per_s'] >= 50 else 'MISSED'}",
        f"target <= 100 ms per 1,000-line file: {'met' if r['analyze_1000_ms'] <= 100 else 'MISSED'}",
    ]
    return "\n".join(lines + ["", *targets]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--repeats", type=int, default=3, help="for the CLI runs and ast.parse")
    parser.add_argument("--latency-repeats", type=int, default=21)
    parser.add_argument("--libcst-repeats", type=int, default=1)
    parser.add_argument("--torchfix-repeats", type=int, default=1)
    parser.add_argument("--skip-torchfix", action="store_true", help="TorchFix needs minutes on this corpus")
    parser.add_argument("--skip-libcst", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args(argv)
    results = measure(args)
    text = report(results)
    print(text, end="")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
