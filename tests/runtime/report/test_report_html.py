"""report.html: self-contained, charts and verdict present, escaped; a headless-Chromium screenshot."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Sequence

import pytest

from torchtriage.findings import Finding, Severity, Span
from torchtriage.runtime.results.profile_data import LineCost, MemoryLine, MemoryStep, ProfileData, StepTiming, SyncPoint
from torchtriage.runtime.report.writer import write_reports

MIB = 2**20


class Collect(HTMLParser):
    """Tags with their attributes, and the text under the verdict section."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(attrs[k] in (a.get(k.rstrip("_")) or "").split() for k in attrs)]


def scenario(tmp: Path, script_name: str = "train.py", findings: Sequence[Finding] = ()) -> Path:
    script = tmp / script_name
    script.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 61)), encoding="utf-8")
    n = 6
    p = ProfileData(
        str(script), [], str(tmp), "cpu", "cpu", "2.13.0", "3.11", "optimizer",
        steps=[StepTiming(i, i * 10_000.0, (i + 1) * 10_000.0) for i in range(n)],
        category_us={"data_loading": 0.55 * 10_000 * n, "compute": 0.35 * 10_000 * n, "host_sync": 0.02 * 10_000 * n},
        lines=[
            LineCost(str(script), 12, "data_loading", 0.5 * 10_000 * n, top_names=["time.sleep"]),
            LineCost(str(script), 30, "compute", 0.3 * 10_000 * n, top_names=["aten::addmm"]),
        ],
        sync_points=[SyncPoint(str(script), 40, "item", n, 0.02 * 10_000 * n)],
        memory_steps=[MemoryStep(i, 30 * MIB + i * MIB, 20 * MIB + i * MIB) for i in range(n)],
        memory_lines=[MemoryLine(str(script), 33, 8 * MIB, 5 * MIB)],
        loader_workers=0,
    )
    return write_reports(p, tmp / "run", findings).html


def test_page_has_verdict_charts_and_hot_lines(tmp_path: Path) -> None:
    page = Collect()
    page.feed(scenario(tmp_path).read_text(encoding="utf-8"))
    verdict = page.having("section", id="verdict")
    assert verdict and verdict[0]["data-kind"] == "memory_growth"  # memory grows 1 MiB/step steadily
    assert page.having("div", class_="secondary")[0]["data-kind"] == "data_loading"
    assert page.having("svg", class_="breakdown")
    segs = {a["data-category"] for a in page.having("rect", class_="seg")}
    assert {"data_loading", "compute", "host_sync"} <= segs
    bars = page.having("rect", class_="bar")
    assert [b["data-category"] for b in bars] == ["data_loading", "compute"]
    assert float(bars[0]["width"]) > float(bars[1]["width"])
    assert page.having("svg", class_="hotlines")
    assert len(page.having("polyline", class_="series")) == 3  # step times + 2 memory series
    text = " ".join(page.text)
    assert "train.py:12" in text and "line_12 = 12" in text  # location and snippet
    assert "num_workers" in text


def test_cuda_only_findings_on_a_cpu_run_carry_no_cost(tmp_path: Path) -> None:
    script = str(tmp_path / "train.py")
    findings = [
        Finding(script, Span(12, 1, 12, 20), "TT302", "dataloader-no-workers", Severity.WARNING, "loads in the training process"),
        Finding(script, Span(12, 1, 12, 20), "TT303", "dataloader-no-pin-memory", Severity.WARNING, "copied from pageable memory"),
    ]
    page = Collect()
    page.feed(scenario(tmp_path, findings=findings).read_text(encoding="utf-8"))
    cost_table = " ".join(page.text).split("Findings and their cost", 1)[1].split("On a GPU these would also matter", 1)
    assert "TT302" in cost_table[0] and "TT303" not in cost_table[0]  # TT303 is CUDA-only: no share on a CPU run
    assert "TT303" in cost_table[1] and "copied from pageable memory" in cost_table[1]
    assert page.having("ul", class_="gpu-only")


def test_page_is_self_contained(tmp_path: Path) -> None:
    html = scenario(tmp_path).read_text(encoding="utf-8")
    page = Collect()
    page.feed(html)
    assert not page.having("script") and not page.having("link") and not page.having("img")
    for _, attrs in page.tags:
        for key in ("src", "href"):
            assert not (attrs.get(key) or "").startswith(("http:", "https:", "//"))
    assert "@import" not in html and "url(" not in html


def test_untrusted_text_is_escaped(tmp_path: Path) -> None:
    html = scenario(tmp_path, "<img src=x onerror=alert(1)>.py").read_text(encoding="utf-8")
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """Width, height and a rough count of distinct pixel rows (to tell a blank page)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length = struct.unpack(">I", data[pos : pos + 4])[0]
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = len(raw) // height
    rows = {raw[i * stride + 1 : (i + 1) * stride] for i in range(height)}
    return width, height, len(rows)


@pytest.mark.slow
def test_headless_chromium_renders_the_page(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on PATH (apt-get install -y chromium)")
    html = scenario(tmp_path)
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
         "--window-size=900,1800", html.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    width, height, distinct_rows = _png_size_and_colours(shot)
    assert (width, height) == (900, 1800)
    assert distinct_rows > 100  # text, bars and charts, not a blank page
