"""report.html in headless Chromium: no chart text is clipped by its SVG or overlaps other text.

The page is loaded with long labels (a long script name, line numbers in the
thousands, long source lines, static-code badges, tens of GiB of memory, steps
of seconds); a script injected into a copy of the page measures every SVG
``<text>`` with ``getBBox()`` against its ``viewBox`` and against the other
texts of the same chart.  A screenshot is kept beside it for debugging.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from torchtriage.findings import Finding, Severity, Span
from torchtriage.runtime.results.profile_data import LineCost, MemoryLine, MemoryStep, OpCost, ProfileData, StepTiming, SyncPoint
from torchtriage.runtime.report.writer import write_reports

MIB = 2**20
LONG_NAME = "a_rather_long_training_script_name_for_the_layout_check.py"
CHECK = r"""
<script>
(function () {
  const problems = [];
  let texts = 0;
  document.querySelectorAll('svg').forEach((svg) => {
    const chart = svg.getAttribute('aria-label') || svg.getAttribute('class');
    const vb = svg.viewBox.baseVal;
    const boxes = [];
    svg.querySelectorAll('text').forEach((t) => {
      const b = t.getBBox();
      const box = {x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent};
      texts += 1;
      if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5) {
        problems.push({chart: chart, problem: 'clipped', box: box, viewBox: [vb.x, vb.y, vb.width, vb.height]});
      }
      boxes.forEach((o) => {
        const dx = Math.min(b.x + b.width, o.x + o.w) - Math.max(b.x, o.x);
        const dy = Math.min(b.y + b.height, o.y + o.h) - Math.max(b.y, o.y);
        if (dx > 1 && dy > 1) problems.push({chart: chart, problem: 'overlap', box: box, other: o});
      });
      boxes.push(box);
    });
  });
  const pre = document.createElement('pre');
  pre.id = 'layout-result';
  pre.textContent = JSON.stringify({texts: texts, svgs: document.querySelectorAll('svg').length, problems: problems});
  document.body.appendChild(pre);
})();
</script>
"""


def long_label_report(tmp: Path) -> Path:
    """A report whose charts carry the longest labels a real run plausibly has."""
    script = tmp / LONG_NAME
    script.write_text(
        "".join(f"x_{i} = model_with_a_long_name(batch_with_a_long_name, another_argument={i}).sum()\n" for i in range(1, 2201)),
        encoding="utf-8",
    )
    n = 12
    step_us = 12_345_678.0
    path = str(script)
    p = ProfileData(
        path, [], str(tmp), "cpu", "cpu", "2.13.0", "3.11", "optimizer",
        steps=[StepTiming(i, i * step_us, (i + 1) * step_us + (i % 3) * 1e5) for i in range(n)],
        category_us={"data_loading": 0.31 * step_us * n, "compute": 0.30 * step_us * n, "host_sync": 0.12 * step_us * n,
                     "python_overhead": 0.11 * step_us * n, "launch_overhead": 0.08 * step_us * n, "optimizer": 0.05 * step_us * n,
                     "communication": 0.02 * step_us * n},
        lines=[
            LineCost(path, 2101, "data_loading", 0.31 * step_us * n, top_names=["time.sleep"]),
            LineCost(path, 2102, "compute", 0.30 * step_us * n, top_names=["aten::addmm"]),
            LineCost(path, 2103, "host_sync", 0.12 * step_us * n, top_names=["aten::item"]),
            LineCost(path, 2104, "python_overhead", 0.005 * step_us * n),
            LineCost(path, 2105, "launch_overhead", 0.0001 * step_us * n),
        ],
        sync_points=[SyncPoint(path, 2103, "item", n * 1000, 0.12 * step_us * n)],
        memory_steps=[MemoryStep(i, 23_456 * MIB + i * 37 * MIB, 21_000 * MIB + i * 37 * MIB) for i in range(n)],
        memory_lines=[MemoryLine(path, 2102, 987_654 * MIB, 12_345 * MIB)],
        ops=[OpCost("aten::addmm", "cpu", 3 * n, 0.3 * step_us * n, 0.4 * step_us * n, True, path, 2102, "train")],
        loader_workers=0,
    )
    findings = [Finding(path, Span(line, 1, line, 10), code, code.lower(), Severity.WARNING, "m")
                for line, code in ((2101, "TT302"), (2103, "TT101"), (2103, "TT102"), (2105, "TT103"), (2105, "TT104"))]
    return write_reports(p, tmp / "run", findings).html


def _chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on PATH (apt-get install -y chromium)")
    return browser


def _run(browser: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={tmp / 'chromium-profile'}", "--window-size=900,2400"]
    return subprocess.run([browser, *flags, *args], check=True, capture_output=True, text=True, timeout=120)


def layout_problems(page: Path, tmp: Path) -> dict[str, Any]:
    """Load a copy of ``page`` with the measuring script in Chromium; returns its findings.

    Also writes ``layout.png`` (a screenshot of the unmodified page) into ``tmp``."""
    browser = _chromium()
    probe = tmp / "layout-probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = _run(browser, tmp, "--dump-dom", probe.as_uri()).stdout
    found = re.search(r"<pre id=\"layout-result\">(.*?)</pre>", dom, re.S)
    assert found, f"the measuring script did not run: {dom[-500:]}"
    _run(browser, tmp, f"--screenshot={tmp / 'layout.png'}", page.as_uri())
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.slow
def test_no_chart_text_is_clipped_or_overlaps(tmp_path: Path) -> None:
    page = long_label_report(tmp_path)
    result = layout_problems(page, tmp_path)
    assert result["svgs"] >= 4 and result["texts"] > 40  # breakdown, step times, hot lines, memory
    problems = "\n".join(json.dumps(p) for p in result["problems"])
    assert not result["problems"], f"{len(result['problems'])} layout problems (screenshot: {tmp_path / 'layout.png'}):\n{problems}"
    assert (tmp_path / "layout.png").stat().st_size > 10_000


@pytest.mark.slow
def test_the_check_sees_a_clipped_label(tmp_path: Path) -> None:
    """The measuring script itself works: a label drawn past the edge is reported."""
    page = tmp_path / "clipped.html"
    page.write_text(
        "<!DOCTYPE html><html><body><svg aria-label='bad' xmlns='http://www.w3.org/2000/svg' width='200' height='40' "
        "viewBox='0 0 200 40'><text x='4' y='20' text-anchor='end' font-size='12'>12345.6 MiB</text>"
        "<text x='60' y='20' font-size='12'>first label</text><text x='70' y='22' font-size='12'>second</text></svg></body></html>",
        encoding="utf-8",
    )
    problems = layout_problems(page, tmp_path)["problems"]
    assert {p["problem"] for p in problems} == {"clipped", "overlap"}
