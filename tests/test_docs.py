"""The documentation site builds with no broken link, its rules reference is generated from the rules, and
each JSON contract's document exists exactly once (beside the code; the site shows it, nothing copies it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchtriage.analysis.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = {
    "findings-json": ROOT / "server/torchtriage/output/FINDINGS_SCHEMA.md",
    "report-schema": ROOT / "server/torchtriage/runtime/report/REPORT_SCHEMA.md",
    "compare-schema": ROOT / "server/torchtriage/runtime/compare/COMPARE_SCHEMA.md",
    "lab-schema": ROOT / "server/torchtriage/runtime/lab/LAB_SCHEMA.md",
    "verify-schema": ROOT / "server/torchtriage/runtime/verify/VERIFY_SCHEMA.md",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs")
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]  # --strict: a broken link or anchor fails
    assert not (ROOT / "site").exists()
    return out


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("index.html", "guides/check/index.html", "guides/profile/index.html", "guides/analyze/index.html",
                 "guides/jupyterlab/index.html", "guides/vscode/index.html", "guides/lsp-clients/index.html",
                 "guides/ci/index.html", "architecture/index.html", "benchmarks/index.html"):
        assert (site / page).is_file(), page


def test_the_rules_reference_is_generated_from_every_rule(site: Path) -> None:
    page = (site / "reference" / "rules" / "index.html").read_text(encoding="utf-8")
    for rule in all_rules():
        assert f'id="{rule.code.lower()}"' in page, rule.code
        assert rule.name in page, rule.name


def test_each_contract_is_one_document_that_the_site_shows(site: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    for slug, source in SCHEMAS.items():
        body = source.read_text(encoding="utf-8").split("\n", 1)[1].strip()
        sample = next(line for line in body.splitlines() if len(line) > 60 and not line.startswith(("|", "#", "`")))  # a prose line
        copies = [p for p in tracked if (ROOT / p).resolve() != source.resolve() and sample in (ROOT / p).read_text(encoding="utf-8")]
        assert not copies, f"{source.name} is copied into {copies}"
        shown = (site / "reference" / slug / "index.html").read_text(encoding="utf-8")
        words = re.findall(r"[A-Za-z]{7,}", sample)[:3]
        assert words and all(w in shown for w in words), (slug, words)


def test_the_site_is_never_built_into_the_checkout() -> None:
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8") or not shutil.which("git")
